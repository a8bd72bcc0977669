#!/usr/bin/env bash
# Static checks over every module of the repository (each one go.work
# lists, checked against the go.mod files of the tree: the library, its
# stores, the proxy, metrics, ...): gofmt -l, go mod tidy -diff, go vet,
# staticcheck and govulncheck, in the workspace. It prints every finding
# and exits non-zero if there is any.
#
#   scripts/static.sh
#
# The tools come from the Go module proxy at pinned versions and are
# installed once into $STATIC_TOOLS (default ~/.cache/waitingroom/tools),
# one folder per version.
#
# govulncheck needs the Go vulnerability database. It is built locally from
# the golang.org/x/vulndb module (the database's own source, fetched through
# the module proxy) with that module's indexdb command, so no other host is
# needed; it is cached per version. By default the newest version of the
# module is used (a stale database misses new vulnerabilities); set
# VULNDB_VERSION to pin one, or GOVULNDB to a database URL (for example
# https://vuln.go.dev, or file:///path) to use that instead.
#
# Standard-library vulnerabilities are fixed by a newer Go toolchain, not
# in code: govulncheck names the Go release that fixes them. VULNCHECK=warn
# prints govulncheck's findings without failing, for while such an update
# is pending; the default is to fail.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

STATICCHECK_VERSION=v0.8.2 # staticcheck 2026.2.2
GOVULNCHECK_VERSION=v1.9.0
VULNDB_TOOL_VERSION=v0.0.0-20261105234957-e22db6528018 # golang.org/x/vulndb, for cmd/indexdb
VULNDB_VERSION=${VULNDB_VERSION:-latest}
VULNCHECK=${VULNCHECK:-fail}

export GOFLAGS="${GOFLAGS:-} -buildvcs=false -trimpath" # -trimpath: scripts/test.sh
cache=${XDG_CACHE_HOME:-$HOME/.cache}/waitingroom
tools=${STATIC_TOOLS:-$cache/tools}

failed=()
step() { printf '\n== %s (at %d s)\n' "$*" "$SECONDS"; }
fail() { failed+=("$*"); }

# install NAME MODULE/PATH@VERSION: prints the path of the binary.
install() {
  local name=$1 pkg=$2 dir
  dir="$tools/$name-${pkg##*@}"
  if [[ ! -x $dir/$name ]]; then
    echo "installing $pkg" >&2
    GOBIN="$dir" GOWORK=off go install "$pkg" >&2 || return 1
  fi
  echo "$dir/$name"
}

mkdir -p "$cache"
source scripts/modules.sh || exit 1

step "gofmt -l"
mapfile -t unformatted < <(find . -name '*.go' -not -path '*/testdata/*' -not -path './.git/*' -print0 | xargs -0 gofmt -l)
if [[ ${#unformatted[@]} -gt 0 ]]; then
  printf '%s: not gofmt-ed\n' "${unformatted[@]}"
  fail "gofmt: ${unformatted[*]}"
fi

step "go mod tidy -diff (every module)"
bash scripts/tidy.sh -diff || fail "go.mod or go.sum not tidy: run scripts/tidy.sh"

for mod in "${modules[@]}"; do
  step "go vet ($mod)"
  (cd "$mod" && go vet ./...) || fail "go vet in $mod"
done

if staticcheck=$(install staticcheck "honnef.co/go/tools/cmd/staticcheck@$STATICCHECK_VERSION"); then
  for mod in "${modules[@]}"; do
    step "staticcheck ($mod)"
    (cd "$mod" && "$staticcheck" ./...) || fail "staticcheck in $mod"
  done
else
  fail "installing staticcheck $STATICCHECK_VERSION"
fi

# vulndb prints a file:// URL of a local vulnerability database.
vulndb() {
  local version=$VULNDB_VERSION dir src indexdb
  if [[ $version == latest ]]; then
    if ! version=$(cd "$cache" && GOWORK=off go list -m -f '{{.Version}}' golang.org/x/vulndb@latest 2>/dev/null); then
      echo "cannot resolve golang.org/x/vulndb@latest; using $VULNDB_TOOL_VERSION" >&2
      version=$VULNDB_TOOL_VERSION
    fi
  fi
  dir="$cache/vulndb-$version"
  if [[ ! -f $dir/index/db.json ]]; then
    echo "building the vulnerability database from golang.org/x/vulndb@$version" >&2
    src=$(cd "$cache" && GOWORK=off go mod download -json "golang.org/x/vulndb@$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p') || return 1
    [[ -d $src/data/osv ]] || { echo "no data/osv in golang.org/x/vulndb@$version" >&2; return 1; }
    indexdb=$(install indexdb "golang.org/x/vulndb/cmd/indexdb@$VULNDB_TOOL_VERSION") || return 1
    rm -rf "$dir.tmp" && "$indexdb" -vulns "$src/data/osv" -out "$dir.tmp" >&2 && mv "$dir.tmp" "$dir" || return 1
  fi
  echo "file://$dir"
}

if govulncheck=$(install govulncheck "golang.org/x/vuln/cmd/govulncheck@$GOVULNCHECK_VERSION") &&
  db=${GOVULNDB:-$(vulndb)}; then
  for mod in "${modules[@]}"; do
    # By the packages imported, not the call graph, where the graph is
    # large: ./wrcaddy's (Caddy's) took 50 s and 4.4 GB alone, six
    # minutes beside the tests, for the same 15 findings; ./examples' and
    # ./integration's (programs that are not shipped) 34 and 21 s of CPU
    # alone, eight minutes beside the tests.
    scan=symbol
    case $mod in ./wrcaddy | ./examples | ./integration) scan=package ;; esac
    step "govulncheck ($mod, -scan $scan, $db)"
    (cd "$mod" && "$govulncheck" -scan "$scan" -db "$db" ./...)
    case $? in
      0) ;;
      3) if [[ $VULNCHECK == warn ]]; then
           echo "static.sh: VULNCHECK=warn: not failing on these findings" >&2
         else
           fail "govulncheck in $mod: vulnerabilities found"
         fi ;;
      *) fail "govulncheck in $mod: it could not run" ;;
    esac
  done
else
  fail "installing govulncheck $GOVULNCHECK_VERSION or its database"
fi

echo
if [[ ${#failed[@]} -gt 0 ]]; then
  echo "static.sh: ${#failed[@]} check(s) failed:"
  printf '  %s\n' "${failed[@]}"
  exit 1
fi
echo "static.sh: no findings"
