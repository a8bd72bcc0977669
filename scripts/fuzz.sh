#!/usr/bin/env bash
# Runs every native Go fuzz target of the repository, one after the other,
# for the given number of seconds each (default 60), or for the given
# number of executions each (a count ending in x, as go test's -fuzztime).
#
#   scripts/fuzz.sh [seconds]
#   scripts/fuzz.sh [executions]x
#
# A time budget can fail with a bare "context deadline exceeded" and no
# failing input, a race in the Go toolchain's fuzzing coordinator at the
# deadline (golang/go#75804, fixed in Go 1.27), seen here on a busy
# machine; an execution count has no deadline to race, so CI uses one.
#
# Targets are found in every module (each one go.work lists): a
# package whose tests define a func Fuzz... is asked for its targets with
# `go test -list`, and each target runs alone with
# `go test -run '^$' -fuzz '^Name$' -fuzztime N[s|x]`. The seed corpus of a
# target is its f.Add calls and the files in the package's
# testdata/fuzz/Name/. A failure does not stop the others; the script
# exits non-zero at the end, naming the failing targets. The input that
# failed is written to the package's testdata/fuzz/Name/: commit it with
# the fix, as a regression seed.
#
# Environment: FUZZ_PARALLEL, the number of fuzzing workers (default: go
# test's, GOMAXPROCS).
set -euo pipefail
cd "$(dirname "$0")/.."

budget=${1:-60}
if [[ $budget =~ ^[1-9][0-9]*$ ]]; then
  fuzztime=${budget}s
  timeout=$((budget + 600))s
elif [[ $budget =~ ^[1-9][0-9]*x$ ]]; then
  fuzztime=$budget
  timeout=1800s
else
  echo "usage: $0 [seconds per target, default 60 | executions per target, as 20000x]" >&2
  exit 2
fi
export GOFLAGS="${GOFLAGS:-} -buildvcs=false -trimpath" # -trimpath: scripts/test.sh
parallel=()
[[ -n ${FUZZ_PARALLEL:-} ]] && parallel=(-parallel "$FUZZ_PARALLEL")

source scripts/modules.sh || exit 1

targets=() # "module<TAB>package<TAB>Name"
for mod in "${modules[@]}"; do
  # Packages of this module whose test files define a fuzz target.
  while IFS=$'\t' read -r pkg dir files; do
    [[ -n ${files// /} ]] || continue
    # shellcheck disable=SC2086 # files is a list of names, split here
    (cd "$dir" && grep -lqE '^func Fuzz[A-Z0-9_]' $files) || continue
    if ! names=$(cd "$mod" && go test -list '^Fuzz' "$pkg"); then
      echo "fuzz.sh: listing the fuzz targets of $pkg failed" >&2
      exit 1
    fi
    while read -r name; do
      [[ $name == Fuzz* ]] && targets+=("$mod"$'\t'"$pkg"$'\t'"$name")
    done <<<"$names"
  done < <(cd "$mod" && go list -f '{{.ImportPath}}{{"\t"}}{{.Dir}}{{"\t"}}{{join .TestGoFiles " "}} {{join .XTestGoFiles " "}}' ./...)
done

if [[ ${#targets[@]} -eq 0 ]]; then
  echo "fuzz.sh: no fuzz targets found" >&2
  exit 1
fi
echo "fuzz.sh: ${#targets[@]} targets, ${fuzztime} each"

failed=()
for t in "${targets[@]}"; do
  IFS=$'\t' read -r mod pkg name <<<"$t"
  printf '\n== %s %s\n' "$pkg" "$name"
  if ! (cd "$mod" && go test "${parallel[@]}" -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" \
    -timeout "$timeout" "$pkg"); then
    failed+=("$pkg $name")
  fi
done

echo
if [[ ${#failed[@]} -gt 0 ]]; then
  echo "fuzz.sh: ${#failed[@]} of ${#targets[@]} targets failed:"
  printf '  %s\n' "${failed[@]}"
  exit 1
fi
echo "fuzz.sh: all ${#targets[@]} targets passed (${fuzztime} each)"
