#!/usr/bin/env bash
# Builds what a program that imports only the library gets: a throwaway
# module importing the root package and store/memstore, declaring the
# library's go version, with a replace (in the throwaway module only)
# pointing github.com/go-waitingroom/waitingroom at this checkout, in an
# empty module cache. It runs `go mod tidy` and `go build` there and
# prints how many modules its go.sum names and how much was downloaded.
#
#   scripts/consumer.sh
#
# It fails if the go.sum names more than CONSUMER_MAX_MODULES modules
# (default 10), or if tidy raised the consumer's go directive: a library
# that forces its users onto a newer Go, or makes them download the store
# drivers, the proxy's or the examples' dependencies, fails here.
#
# Environment: CONSUMER_GO, the go version the consumer declares (default
# the library's, from go.mod); a lower one shows what an older consumer is
# raised to, and fails.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
max=${CONSUMER_MAX_MODULES:-10}
libgo=$(GOWORK=off go mod edit -json | sed -n 's/^\t"Go": "\(.*\)",$/\1/p')
want=${CONSUMER_GO:-$libgo}

work=$(mktemp -d)
# The module cache is made writable (-modcacherw) so that it can be removed.
trap 'rm -rf "$work"' EXIT
export GOWORK=off GOMODCACHE="$work/modcache" GOFLAGS="${GOFLAGS:-} -modcacherw"
mkdir "$work/consumer"
cd "$work/consumer"
cat >go.mod <<END
module example.com/consumer

go $want

require github.com/go-waitingroom/waitingroom v0.0.0-00010101000000-000000000000

replace github.com/go-waitingroom/waitingroom => $root
END
cat >main.go <<'END'
package main

import (
	_ "github.com/go-waitingroom/waitingroom"
	_ "github.com/go-waitingroom/waitingroom/store/memstore"
)

func main() {}
END

echo "consumer.sh: a module declaring go $want imports the library and store/memstore; empty module cache"
go mod tidy
go build -o /dev/null .

got=$(go mod edit -json | sed -n 's/^\t"Go": "\(.*\)",$/\1/p')
toolchain=$(go mod edit -json | sed -n 's/^\t"Toolchain": "\(.*\)",$/\1/p')
lines=$(wc -l <go.sum)
mapfile -t mods < <(awk '{ print $1 }' go.sum | sort -u)
cache=$(du -sm "$GOMODCACHE" | cut -f1)
archives=$(du -sm "$GOMODCACHE/cache/download" | cut -f1)

echo "go.sum: $lines lines, ${#mods[@]} modules:"
printf '  %s\n' "${mods[@]}"
echo "module cache after tidy and build: ${cache} MB (${archives} MB of it downloaded archives and go.mod files)"
echo "go directive: declared go $want, after tidy go $got${toolchain:+, toolchain $toolchain}"

status=0
if [[ ${#mods[@]} -gt $max ]]; then
  echo "consumer.sh: FAIL: the go.sum names ${#mods[@]} modules, more than $max" >&2
  status=1
fi
if [[ $got != "$want" || -n $toolchain ]]; then
  echo "consumer.sh: FAIL: go mod tidy raised the consumer's go directive from $want to $got${toolchain:+ (toolchain $toolchain)}" >&2
  status=1
fi
[[ $status -eq 0 ]] && echo "consumer.sh: ok"
exit $status
