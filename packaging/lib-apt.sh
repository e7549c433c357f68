# lib-apt.sh - shared by the packaging/install-*.sh scripts (sourced, not
# run): install only the Debian packages that are missing.
#
# apt_install_missing NAME PKG...: checks each PKG with dpkg-query and, when
# some are missing, installs just those with apt-get (via sudo when not
# root); apt is not consulted when everything is present. NAME prefixes
# the messages. Returns non-zero when it cannot or could not install.
# shellcheck shell=sh

apt_install_missing() {
	_apt_name=$1
	shift
	_apt_missing=""
	for _apt_p in "$@"; do
		if ! dpkg-query -W -f='${Status}' "$_apt_p" 2>/dev/null | grep -q "install ok installed"; then
			_apt_missing="$_apt_missing $_apt_p"
		fi
	done

	if [ -z "$_apt_missing" ]; then
		return 0
	fi

	_apt_sudo=""
	if [ "$(id -u)" -ne 0 ]; then
		if command -v sudo >/dev/null 2>&1; then
			_apt_sudo="sudo"
		else
			echo "$_apt_name: need root to install:$_apt_missing" >&2
			return 1
		fi
	fi

	echo "$_apt_name: installing:$_apt_missing"
	$_apt_sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq
	# shellcheck disable=SC2086
	$_apt_sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
		--no-install-recommends $_apt_missing
}
