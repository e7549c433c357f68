#!/bin/sh
# systemd-check.sh - the Debian package under a real systemd, for a machine
# where that is possible (root, debootstrap and systemd-container installed,
# Debian's archive reachable): `packaging/systemd-check.sh DEB [ROOT]`.
#
# Makes a minimal Debian 12 tree in ROOT (default
# /var/tmp/headroom-systemd-root, kept for the next time) with the runtime
# libraries the package's Depends name, boots it with systemd-nspawn, and
# there: installs the package (user, data directory, unit neither enabled
# nor started), starts headroomd (Type=notify: active once listening; as
# user headroom, no new privileges, seccomp on), runs
# examples/mock.json, stops the daemon during a run (the run ends
# interrupted with its records, exit status 0), restarts it after a crash
# (Restart=on-failure), reinstalls (a running daemon is restarted),
# removes (stopped, data kept) and purges (data gone). Prints each check;
# exits 0 only when all pass. Not part of make check: CI machines are
# containers in which booting systemd is not always allowed.
set -eu

if [ $# -lt 1 ] || [ $# -gt 2 ]; then
	echo "usage: $0 DEB [ROOT]" >&2
	exit 2
fi
deb=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
root=${2:-/var/tmp/headroom-systemd-root}
src=$(cd "$(dirname "$0")/.." && pwd)
[ "$(id -u)" -eq 0 ] || { echo "$0: must run as root" >&2; exit 1; }
for tool in debootstrap systemd-nspawn dpkg-deb; do
	command -v "$tool" >/dev/null 2>&1 || { echo "$0: $tool is missing" >&2; exit 1; }
done

if [ ! -x "$root/lib/systemd/systemd" ]; then
	libs=$(dpkg-deb -f "$deb" Depends | tr ',' '\n' | sed 's/(.*)//; s/ //g' | grep -v '^$' |
		paste -sd, -)
	debootstrap --variant=minbase --include="systemd,systemd-sysv,dbus,procps,$libs" \
		bookworm "$root" "${DEBIAN_MIRROR:-http://deb.debian.org/debian}" >"$root.log" 2>&1 || {
		echo "$0: debootstrap failed, see $root.log" >&2
		exit 1
	}
fi

cp "$deb" "$root/root/headroom.deb"
cp "$src/examples/mock.json" "$root/root/mock.json"
rm -f "$root/root/hr-check.log" "$root/root/hr-check.result"
cat >"$root/root/long.json" <<'SPEC'
{"name": "long",
 "target": {"mock": true, "model": "mock-model", "endpoint": "chat", "stream": true},
 "workload": {"osl": {"mean": 16}},
 "load": {"mode": "rate", "rate": 200, "arrival": "constant", "duration_s": 120}, "workers": 2}
SPEC
cat >"$root/usr/local/bin/hr-check" <<'CHECK'
#!/bin/sh
# hr-check - run inside the booted tree by hr-check.service (systemd-check.sh)
exec >/root/hr-check.log 2>&1
fails=0
ok() { echo "ok   - $1"; }
check() {
	desc=$1; shift
	if "$@"; then ok "$desc"; else echo "FAIL - $desc"; fails=$((fails + 1)); fi
}
prop() { hr-prop "$1"; }
wait_for() { # seconds, command...
	n=$1; shift
	while [ "$n" -gt 0 ]; do "$@" && return 0; sleep 1; n=$((n - 1)); done
	return 1
}

dpkg --purge headroom >/dev/null 2>&1
check "dpkg -i installs" dpkg -i /root/headroom.deb
check "system user headroom" sh -c 'getent passwd headroom | grep -q ":/var/lib/headroom:"'
check "/var/lib/headroom is 750 headroom" sh -c \
	'[ "$(stat -c %a:%U /var/lib/headroom)" = 750:headroom ]'
check "unit not enabled by the install" sh -c '! systemctl is-enabled -q headroomd'
check "unit not started by the install" sh -c '! systemctl is-active -q headroomd'

check "systemctl start" systemctl start headroomd
check "active (running) once started" sh -c '[ "$(hr-prop SubState)" = running ]'
check "Type=notify: status from the daemon" sh -c \
	'systemctl show -p StatusText --value headroomd | grep -q listening'
pid=$(prop MainPID)
check "runs as headroom" sh -c "[ \"\$(ps -o user= -p $pid)\" = headroom ]"
check "no new privileges" grep -q '^NoNewPrivs:[[:space:]]*1' /proc/"$pid"/status
check "seccomp filter on" grep -q '^Seccomp:[[:space:]]*2' /proc/"$pid"/status
check "API answers" sh -c 'headroom list >/dev/null'
check "a run (workers and mock forked under the filter)" sh -c \
	'headroom submit /root/mock.json --wait >/root/mock.out'

headroom submit /root/long.json >/dev/null
check "a second run has completed 100 requests" wait_for 30 sh -c \
	'headroom show 2 | grep -q "state *running" && headroom show 2 | grep -q "completed [0-9]\{3,\}"'
check "workers run as headroom" sh -c \
	'[ "$(ps -o user= -C headroom-worker | sort -u)" = headroom ]'
t0=$(date +%s)
check "systemctl stop during the run" systemctl stop headroomd
check "stopped within TimeoutStopSec" [ $(($(date +%s) - t0)) -lt 25 ]
check "exit status 0, result success" sh -c \
	'[ "$(hr-prop ExecMainStatus):$(hr-prop Result)" = 0:success ]'
check "no worker left" sh -c '! pgrep -x headroom-worker >/dev/null'
systemctl start headroomd
check "the stopped run ended interrupted with its records" wait_for 10 sh -c \
	'headroom show 2 >/root/show2.out && grep -q "state *interrupted" /root/show2.out &&
	grep -q "records [1-9]" /root/show2.out'
head -12 /root/show2.out

pid=$(prop MainPID)
[ "$pid" -gt 0 ] && kill -SEGV "$pid"
check "restarted after a crash" wait_for 15 sh -c \
	"[ \"\$(systemctl show -p NRestarts --value headroomd)\" = 1 ] && systemctl is-active -q headroomd"
pid=$(prop MainPID)
check "dpkg -i again (upgrade path)" dpkg -i /root/headroom.deb
check "a running daemon is restarted by the upgrade" sh -c \
	"systemctl is-active -q headroomd && [ \"\$(hr-prop MainPID)\" != $pid ]"

check "dpkg -r" dpkg -r headroom
check "removal stopped the daemon" sh -c '! systemctl is-active -q headroomd'
check "removal kept the data" test -f /var/lib/headroom/headroom.db
check "dpkg -P" dpkg -P headroom
check "purge deleted the data" test ! -e /var/lib/headroom
echo "failures: $fails"
echo "$fails" >/root/hr-check.result
systemctl poweroff
CHECK
chmod 755 "$root/usr/local/bin/hr-check"
cat >"$root/usr/local/bin/hr-prop" <<'PROP'
#!/bin/sh
# hr-prop - one property of headroomd.service, for hr-check
exec systemctl show -p "$1" --value headroomd
PROP
chmod 755 "$root/usr/local/bin/hr-prop"
cat >"$root/etc/systemd/system/hr-check.service" <<'UNIT'
[Unit]
Description=headroom package check (packaging/systemd-check.sh)
After=multi-user.target
[Service]
Type=oneshot
ExecStart=/usr/local/bin/hr-check
[Install]
WantedBy=multi-user.target
UNIT
mkdir -p "$root/etc/systemd/system/multi-user.target.wants"
ln -sf /etc/systemd/system/hr-check.service "$root/etc/systemd/system/multi-user.target.wants/"

timeout 600 systemd-nspawn -q -D "$root" -b --register=no --keep-unit \
	--console=read-only >"$root.boot.log" 2>&1 || true
cat "$root/root/hr-check.log" 2>/dev/null || echo "$0: no check log; boot log: $root.boot.log"
[ "$(cat "$root/root/hr-check.result" 2>/dev/null)" = 0 ]
