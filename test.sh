#!/usr/bin/env bash
# The project's test command (README.md): gofmt, vet and staticcheck, then
# every test once, then the packages with concurrency again under the race
# detector. It installs what it needs (staticcheck, and gcc for -race) when
# missing, so it runs on a fresh machine that has only Go.
set -euo pipefail
cd "$(dirname "$0")"

# staticcheck 2026.2.2, the newest release, and the first to support Go 1.26
# (its go.mod says go 1.26.0). Raise it with the go directive in go.mod.
staticcheck_version=v0.8.2

# The packages whose tests exercise concurrency, run again with -race.
race_packages=(./host/... ./serve/... ./store/...)

echo "== gofmt"
unformatted=$(gofmt -l .)
if [[ -n $unformatted ]]; then
	echo "gofmt -l: these files are not formatted (gofmt -w them):" >&2
	echo "$unformatted" >&2
	exit 1
fi

echo "== go vet"
go vet ./...

echo "== staticcheck"
gobin=$(go env GOBIN)
if [[ -z $gobin ]]; then
	gopath=$(go env GOPATH)
	gobin=${gopath%%:*}/bin
fi
staticcheck=$gobin/staticcheck
if ! [[ -x $staticcheck && $("$staticcheck" -version) == *"(${staticcheck_version#v})"* ]]; then
	echo "installing staticcheck $staticcheck_version into $gobin"
	GOBIN=$gobin go install "honnef.co/go/tools/cmd/staticcheck@$staticcheck_version"
fi
"$staticcheck" ./...

echo "== go test"
go test -count=1 -timeout 30m ./...

echo "== go test -race"
# The race detector needs cgo, and so a C compiler.
cc=$(go env CC)
if ! command -v "${cc%% *}" >/dev/null; then
	echo "installing gcc for the race detector"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gcc >/dev/null
fi
CGO_ENABLED=1 go test -race -count=1 -timeout 30m "${race_packages[@]}"
