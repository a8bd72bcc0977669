# Sourced by the other scripts, from the repository's root: sets the array
# modules to the directories of the repository's Go modules, as go.work
# lists them (".", "./metrics", ...; "." first), and exports GOWORK so
# that every go command of the script runs in the workspace, whatever the
# caller's environment.
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
  return 1 2>/dev/null || exit 1
fi
