#!/bin/sh
# build-deb.sh - builds the headroom Debian package from a CMake build
# directory: `packaging/build-deb.sh BUILD_DIR [OUT_DIR]` (what `make deb` runs).
#
# The package is a staged tree packed by dpkg-deb (no debian/ source
# package, no debhelper): the programs come from `cmake --install --strip`,
# the manual pages from help2man over each program's --help (with
# packaging/man/*.h2m), Depends from dpkg-shlibdeps over the programs, and
# the rest from packaging/ (unit, /etc/headroom/headroomd.conf,
# /etc/default/headroomd, copyright, maintainer scripts).
# docs/operations.md, "Packages and services", says why.
# Prints the path of the .deb on its last line. OUT_DIR defaults to
# BUILD_DIR/deb; the staged tree is left in OUT_DIR/root for inspection.
set -eu

if [ $# -lt 1 ] || [ $# -gt 2 ]; then
	echo "usage: $0 BUILD_DIR [OUT_DIR]" >&2
	exit 2
fi
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "$1" && pwd)
out=${2:-$build/deb}
pkg=headroom
for tool in dpkg-deb dpkg-shlibdeps help2man gzip; do
	command -v "$tool" >/dev/null 2>&1 || {
		echo "$0: $tool is missing (packaging/install-deps.sh installs it)" >&2
		exit 1
	}
done

# One version, the build's: CMake's project(... VERSION), plus Debian revision 1.
upstream=$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$build/CMakeCache.txt")
if [ -z "$upstream" ]; then
	echo "$0: no CMAKE_PROJECT_VERSION in $build/CMakeCache.txt (not a CMake build?)" >&2
	exit 1
fi
version="$upstream-1"
arch=$(dpkg --print-architecture)
maintainer=${HEADROOM_DEB_MAINTAINER:-"headroom maintainers <headroom@example.org>"}
# Reproducible dates: the last commit's, else now.
SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git -C "$src" log -1 --format=%ct 2>/dev/null || date +%s)}
export SOURCE_DATE_EPOCH

umask 022
mkdir -p "$out"
out=$(cd "$out" && pwd)
root="$out/root"
rm -rf "$root"
mkdir -p "$root/DEBIAN"

# Programs, stripped (cmake --install honours DESTDIR).
DESTDIR="$root" cmake --install "$build" --prefix /usr --strip >/dev/null
for p in headroomd headroom-worker headroom-agent headroom-mock headroom; do
	[ -x "$root/usr/bin/$p" ] || { echo "$0: $p was not installed" >&2; exit 1; }
done

# Manual pages from --help. help2man wants "Usage:" and "or:" lines: the
# programs print "usage:" and indent further forms, so a wrapper rewrites
# the first paragraph (a wrapped continuation is joined to its line).
h2m=$(mktemp -d)
trap 'rm -rf "$h2m"' EXIT
mkdir -p "$root/usr/share/man/man1"
for p in headroomd headroom-worker headroom-agent headroom-mock headroom; do
	cat >"$h2m/$p" <<WRAP
#!/bin/sh
"$root/usr/bin/$p" "\$@" | awk -v p="$p" '
	done_ { print; next }
	/^\$/ { if (held != "") print held; held = ""; done_ = 1; print; next }
	NR == 1 { sub(/^usage:/, "Usage:"); held = \$0; next }
	\$1 == p { if (held != "") print held; sub(/^[ \t]+/, ""); held = "   or: " \$0; next }
	{ sub(/^[ \t]+/, ""); held = held " " \$0 }
	END { if (!done_ && held != "") print held }'
WRAP
	chmod 755 "$h2m/$p"
	help2man --no-info --section=1 --version-string="$upstream" \
		--include="$src/packaging/man/$p.h2m" --output="$h2m/$p.1" "$h2m/$p"
	gzip -9n <"$h2m/$p.1" >"$root/usr/share/man/man1/$p.1.gz"
done

# The systemd unit, the configuration file and the unit's environment (conffiles).
install -D -m 0644 "$src/packaging/headroomd.service" "$root/lib/systemd/system/headroomd.service"
install -D -m 0644 "$src/packaging/headroomd.conf" "$root/etc/headroom/headroomd.conf"
install -D -m 0644 "$src/packaging/headroomd.default" "$root/etc/default/headroomd"

# Documentation: copyright, changelog, the README and docs/, the API, example specs.
doc="$root/usr/share/doc/$pkg"
install -d -m 0755 "$doc"
install -m 0644 "$src/packaging/deb/copyright" "$doc/copyright"
install -m 0644 "$src/README.md" "$src/docs/"*.md "$src/api/openapi.yaml" "$src/api/protocol.md" \
	"$doc/"
install -d -m 0755 "$doc/examples"
install -m 0644 "$src/examples/"*.json "$doc/examples/"
date_rfc=$(date -u -R -d "@$SOURCE_DATE_EPOCH")
{
	printf '%s (%s) unstable; urgency=medium\n\n' "$pkg" "$version"
	printf '  * Built from the headroom source tree (packaging/build-deb.sh).\n\n'
	printf ' -- %s  %s\n' "$maintainer" "$date_rfc"
} | gzip -9n >"$doc/changelog.Debian.gz"

# Control: Depends computed from the programs' ELF dependencies.
shl=$(mktemp -d)
mkdir -p "$shl/debian"
printf 'Source: %s\n\nPackage: %s\nArchitecture: any\n' "$pkg" "$pkg" >"$shl/debian/control"
shlibs=$(cd "$shl" && dpkg-shlibdeps -O -e"$root/usr/bin/headroomd" \
	-e"$root/usr/bin/headroom-worker" -e"$root/usr/bin/headroom-mock" -e"$root/usr/bin/headroom" \
	2>/dev/null |
	sed -n 's/^shlibs:Depends=//p')
rm -rf "$shl"
[ -n "$shlibs" ] || { echo "$0: dpkg-shlibdeps found no dependencies" >&2; exit 1; }
size=$(du -sk --exclude=DEBIAN "$root" | cut -f1)
cat >"$root/DEBIAN/control" <<CONTROL
Package: $pkg
Version: $version
Architecture: $arch
Maintainer: $maintainer
Installed-Size: $size
Depends: $shlibs, adduser
Section: net
Priority: optional
Description: benchmark service for LLM inference servers
 headroom measures OpenAI-compatible and other inference servers under
 load: time to first token, inter-token latency, throughput and goodput,
 with every request recorded. This package holds the daemon headroomd
 (REST API, dashboard, run history in SQLite) with its systemd unit, the
 load-generating worker, an inference server simulator (headroom-mock)
 and the command-line client (headroom).
CONTROL
for s in postinst prerm postrm; do
	install -m 0755 "$src/packaging/deb/$s" "$root/DEBIAN/$s"
done
printf '/etc/default/headroomd\n/etc/headroom/headroomd.conf\n' >"$root/DEBIAN/conffiles"
chmod 0644 "$root/DEBIAN/control" "$root/DEBIAN/conffiles"
(cd "$root" && find . -path ./DEBIAN -prune -o -type f -print | LC_ALL=C sort |
	sed 's|^\./||' | xargs md5sum) >"$root/DEBIAN/md5sums"
chmod 0644 "$root/DEBIAN/md5sums"
find "$root" -type d -exec chmod 0755 {} +

deb="$out/${pkg}_${version}_${arch}.deb"
rm -f "$deb"
dpkg-deb --root-owner-group -Zxz --build "$root" "$deb" >/dev/null
echo "$deb"
