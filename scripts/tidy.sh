#!/usr/bin/env bash
# Runs `go mod tidy` in every module of the repository, or in the module
# directories given:
#
#   scripts/tidy.sh [dir...]
#
# go mod tidy works on one module and ignores go.work, and the versions by
# which the modules of the repository require one another are published
# only at a release (docs/releasing.md). So, for the time tidy runs, the
# module's go.mod points every other module of the repository at its
# directory with a replace directive, which is dropped again afterwards,
# whatever happens: a go.mod never keeps a replace. A requirement tidy adds
# on a module of the repository names v0.0.0-00010101000000-000000000000,
# the version go.work maps to the directory.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/modules.sh || exit 1
root=$PWD

# path<TAB>dir of every module of the workspace.
mapfile -t all < <(go list -m -f '{{.Path}}{{"\t"}}{{.Dir}}')
targets=("$@")
[[ ${#targets[@]} -gt 0 ]] || targets=("${modules[@]}")

for mod in "${targets[@]}"; do
  [[ -f $mod/go.mod ]] || { echo "tidy.sh: no go.mod in $mod" >&2; exit 1; }
  echo "== go mod tidy ($mod)"
  (
    cd "$mod"
    self=$(awk '$1 == "module" { print $2; exit }' go.mod)
    edits=() drops=()
    for entry in "${all[@]}"; do
      IFS=$'\t' read -r path dir <<<"$entry"
      [[ $path == "$self" ]] && continue
      rel=$(realpath --relative-to=. "$dir")
      case $rel in
        ..) rel=../ ;;
        ../*) ;;
        *) rel=./$rel ;;
      esac
      edits+=("-replace=$path=$rel")
      drops+=("-dropreplace=$path")
    done
    trap 'go mod edit "${drops[@]}"' EXIT
    go mod edit "${edits[@]}"
    GOWORK=off go mod tidy
  )
done
# Check that the workspace still loads, and record its checksums.
(cd "$root" && go list -m all >/dev/null)
