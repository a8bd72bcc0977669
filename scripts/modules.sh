# shellcheck shell=bash
# Sourced by the other scripts, from the repository's root: sets the array
# modules to the directories of the repository's Go modules, as go.work
# lists them (".", "./metrics", ...; "." first), the associative array
# module_dir from each module's path to its directory, and exports GOWORK
# so that every go command of the script runs in the workspace, whatever
# the caller's environment.
#
# It fails (returns 1, with a message) when go.work and the tree disagree:
# a go.mod outside testdata that go.work does not use, or a directory go.work
# uses without a go.mod. A module left out of go.work would otherwise be
# left out of every check without anyone noticing.

export GOWORK="$PWD/go.work"

modules_list() {
  local listed found
  if ! listed=$(go list -m -f '{{.Dir}}' | while read -r dir; do
    rel=$(realpath --relative-to=. "$dir")
    [[ $rel == . ]] && echo . || echo "./$rel"
  done | sort); then
    echo "modules.sh: go list -m failed in the workspace ($GOWORK)" >&2
    return 1
  fi
  found=$(find . -name go.mod -not -path '*/testdata/*' -not -path './.git/*' -printf '%h\n' | sort)
  if [[ $listed != "$found" ]]; then
    echo "modules.sh: go.work and the go.mod files disagree; add every module to go.work (go work use DIR):" >&2
    diff <(echo "$listed") <(echo "$found") | sed -n 's/^< /  in go.work, no go.mod: /p; s/^> /  go.mod not in go.work: /p' >&2
    return 1
  fi
  # The root first, then the others in order.
  echo .
  grep -vx '\.' <<<"$listed"
}

mapfile -t modules < <(modules_list)
if [[ ${#modules[@]} -eq 0 || ${modules[0]} != . ]]; then
  echo "modules.sh: no module list" >&2
  # shellcheck disable=SC2317 # exit when run rather than sourced
  return 1 2>/dev/null || exit 1
fi

declare -A module_dir=()
for _dir in "${modules[@]}"; do
  module_dir[$(awk '$1 == "module" { print $2; exit }' "$_dir/go.mod")]=$_dir
done
unset _dir

# module_requirements DIR prints "path version" for each requirement of
# the module in DIR on another module of the repository.
module_requirements() {
  awk '/^require \($/ { block = 1; next }
    block && /^\)/ { block = 0; next }
    block && NF >= 2 { print $1, $2; next }
    /^require [^(]/ { print $2, $3 }' "$1/go.mod" |
    while read -r path version; do
      [[ -n ${module_dir[$path]:-} ]] && echo "$path $version"
    done
  return 0
}

# sync_work_replaces rewrites the replace directives of go.work so that
# each version at which a module of the repository requires another maps
# to that module's directory, and nothing else: the go command reads the
# go.mod of every version a module requires, even in a workspace, and the
# versions the modules name are published only once tagged.
sync_work_replaces() {
  local have want path version dir edits=()
  # Every replace of a module of the repository, at its version.
  have=$(awk '/^replace \($/ { block = 1; next }
    block && /^\)/ { block = 0; next }
    block && $3 == "=>" { print $1, $2; next }
    /^replace [^(]/ && $4 == "=>" { print $2, $3 }' "$GOWORK" |
    while read -r path version; do
      [[ -n ${module_dir[$path]:-} ]] && echo "$path $version"
    done | sort -u)
  want=$(for dir in "${modules[@]}"; do module_requirements "$dir"; done | sort -u)
  [[ $have != "$want" ]] || return 0
  while read -r path version; do
    [[ -n $path ]] && edits+=("-dropreplace=$path@$version")
  done <<<"$have"
  [[ ${#edits[@]} -eq 0 ]] || go work edit "${edits[@]}"
  if [[ -n $want ]]; then
    {
      printf '\nreplace (\n'
      while read -r path version; do
        dir=${module_dir[$path]}
        [[ $dir == . ]] && dir=./
        printf '\t%s %s => %s\n' "$path" "$version" "$dir"
      done <<<"$want"
      printf ')\n'
    } >>"$GOWORK"
  fi
  go work edit -fmt
  echo "go.work: the replace directives now map $(grep -c . <<<"$want") required module version(s) to their directories" >&2
}
