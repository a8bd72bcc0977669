#!/usr/bin/env bash
# Makes the modules of the repository require one another at VERSION, the
# release about to be tagged (docs/releasing.md):
#
#   scripts/bump.sh vX.Y.Z
#
# In every go.mod, each requirement on a module of the repository is set
# to VERSION; go.work's replace directives then map VERSION to the
# modules' directories (see scripts/modules.sh), so that the workspace
# builds before the tags are published. It checks that every module still
# builds and vets in the workspace. Review and commit the result; nothing
# is tagged or pushed.
set -euo pipefail
cd "$(dirname "$0")/.."
version=${1:-}
if [[ ! $version =~ ^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]]; then
  echo "usage: $0 vX.Y.Z (a semantic version)" >&2
  exit 2
fi
source scripts/modules.sh || exit 1

for mod in "${modules[@]}"; do
  edits=()
  while read -r path _; do
    edits+=("-require=$path@$version")
  done < <(module_requirements "$mod")
  if [[ ${#edits[@]} -gt 0 ]]; then
    (cd "$mod" && go mod edit "${edits[@]}")
    echo "$mod: ${#edits[@]} requirement(s) on the repository's modules at $version"
  fi
done
sync_work_replaces

for mod in "${modules[@]}"; do
  (cd "$mod" && go build ./... && go vet ./...) || { echo "bump.sh: $mod does not build in the workspace" >&2; exit 1; }
done
echo "bump.sh: the modules require one another at $version"
