#!/usr/bin/env bash
# The project's test command (README.md): gofmt, vet and staticcheck, then
# every test once, then the packages with concurrency again under the race
# detector. It installs what it needs (staticcheck, gcc for -race, and a
# PostgreSQL for store/postgres) when missing, so it runs on a fresh machine
# that has only Go.
set -euo pipefail
cd "$(dirname "$0")"

# staticcheck 2026.2.2, the newest release, and the first to support Go 1.26
# (its go.mod says go 1.26.0). Raise it with the go directive in go.mod.
staticcheck_version=v0.8.2

# The packages whose tests exercise concurrency, run again with -race.
race_packages=(./host/... ./serve/... ./store/...)

# The PostgreSQL the tests use when TEST_DATABASE_URL is unset
# (internal/pgtest): the machine's own, trusting local TCP connections.
pg_port=5432
pg_cluster=main
pg_url="postgres://postgres@127.0.0.1:$pg_port/test?sslmode=disable"

pg_answers() {
	timeout 2 bash -c "</dev/tcp/127.0.0.1/$pg_port" 2>/dev/null
}

# start_postgres installs Debian's postgresql when missing, makes and starts
# a cluster that trusts TCP connections from this machine, and makes the
# test database. It runs as root.
start_postgres() {
	if ! command -v pg_ctlcluster >/dev/null; then
		echo "installing PostgreSQL"
		apt-get update -qq
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
	fi
	local version
	version=$(ls /usr/lib/postgresql | sort -V | tail -n 1)
	# The package's postinst usually makes the cluster; a container may
	# have skipped it.
	if ! pg_lsclusters -h | grep -q "^$version $pg_cluster "; then
		pg_createcluster --port "$pg_port" "$version" "$pg_cluster" >/dev/null
	fi
	local hba=/etc/postgresql/$version/$pg_cluster/pg_hba.conf
	if ! grep -q '^host all all 127.0.0.1/32 trust' "$hba"; then
		# The first matching line wins: these go before Debian's.
		sed -i '1i host all all 127.0.0.1/32 trust\nhost all all ::1/128 trust' "$hba"
	fi
	if pg_lsclusters -h | grep -q "^$version $pg_cluster .* online "; then
		pg_ctlcluster --skip-systemctl-redirect "$version" "$pg_cluster" reload
	else
		pg_ctlcluster --skip-systemctl-redirect "$version" "$pg_cluster" start
	fi
	for _ in $(seq 30); do
		pg_answers && break
		sleep 1
	done
	# From /, which the postgres user may read, unlike the work tree.
	if ! (cd / && runuser -u postgres -- psql -p "$pg_port" -Atc "SELECT 1 FROM pg_database WHERE datname = 'test'") | grep -q 1; then
		(cd / && runuser -u postgres -- createdb -p "$pg_port" test)
	fi
}

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

echo "== PostgreSQL"
if [[ -n ${TEST_DATABASE_URL:-} ]]; then
	echo "using TEST_DATABASE_URL"
elif pg_answers; then
	echo "using the PostgreSQL at 127.0.0.1:$pg_port"
elif [[ $(id -u) == 0 ]]; then
	start_postgres
	pg_answers || { echo "PostgreSQL did not start on 127.0.0.1:$pg_port" >&2; exit 1; }
	echo "started PostgreSQL on 127.0.0.1:$pg_port"
else
	echo "!! no PostgreSQL on 127.0.0.1:$pg_port and not root to install one: the PostgreSQL tests will skip" \
		"(fail under CI=true); set TEST_DATABASE_URL=postgres://… to run them" >&2
fi
# Spelled out for the tests, and a connection attempt gives up rather than
# hang a CI run.
export TEST_DATABASE_URL=${TEST_DATABASE_URL:-$pg_url}
export PGCONNECT_TIMEOUT=${PGCONNECT_TIMEOUT:-10}

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
