#!/usr/bin/env bash
# Runs `go mod tidy` in every module of the repository, or in the module
# directories given; with -diff, changes nothing and fails if a go.mod or
# go.sum is not tidy, printing what tidy would change (static.sh runs it):
#
#   scripts/tidy.sh [-diff] [dir...]
#
# go mod tidy works on one module and ignores go.work, and the versions at
# which the modules of the repository require one another are published
# only once tagged (docs/releasing.md). So, for the time tidy runs, the
# module's go.mod points every other module of the repository at its
# directory with a replace directive, dropped again afterwards whatever
# happens: a go.mod never keeps a replace. A requirement tidy adds on a
# module of the repository names v0.0.0-00010101000000-000000000000; run
# scripts/bump.sh to move it to the coming release's version if others
# name one. Then go.work's replace directives are brought in step with the
# requirements, and the workspace is loaded once to check it.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/modules.sh || exit 1
root=$PWD

diff=()
if [[ ${1:-} == -diff ]]; then
  diff=(-diff)
  shift
fi
targets=("$@")
[[ ${#targets[@]} -gt 0 ]] || targets=("${modules[@]}")

status=0
for mod in "${targets[@]}"; do
  [[ -f $mod/go.mod ]] || { echo "tidy.sh: no go.mod in $mod" >&2; exit 1; }
  echo "== go mod tidy${diff[*]:+ ${diff[*]}} ($mod)"
  (
    cd "$mod"
    self=$(awk '$1 == "module" { print $2; exit }' go.mod)
    edits=() drops=()
    for path in "${!module_dir[@]}"; do
      [[ $path == "$self" ]] && continue
      rel=$(realpath --relative-to=. "$root/${module_dir[$path]}")
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
    GOWORK=off go mod tidy "${diff[@]}"
  ) || status=1
done
if [[ $status -ne 0 ]]; then
  [[ ${#diff[@]} -gt 0 ]] && echo "tidy.sh: not tidy; run scripts/tidy.sh" >&2
  exit 1
fi
if [[ ${#diff[@]} -eq 0 ]]; then
  sync_work_replaces
fi
# The workspace loads (and go.work.sum holds its checksums).
go list -m all >/dev/null
