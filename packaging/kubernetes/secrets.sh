#!/bin/sh
# secrets.sh - makes the keys headroomd and its agents need and stores them
# in the cluster, for the manifests beside this file (README.md):
#
#   packaging/kubernetes/secrets.sh [KEY_DIR]
#
# KEY_DIR (default ./headroom-keys, created mode 700) keeps the files:
#   server.key, server.pub  the daemon's CURVE key pair (headroomd keygen)
#   agent.key, agent.pub    the agents' CURVE key pair (headroom-agent keygen)
#   tls.crt, tls.key        a self-signed certificate for the API (openssl)
# Files already there are kept, so running it again only re-applies the
# objects; delete a pair to replace it. The objects, in namespace
# $HEADROOM_NAMESPACE (default headroom):
#   Secret headroomd-agent-key     server.key, server.pub  (headroomd)
#   Secret headroomd-tls           tls.crt, tls.key        (headroomd)
#   Secret headroom-agent-key      agent.key, agent.pub    (the agents)
#   ConfigMap headroomd-public-key server.pub              (the agents)
# The key programs are the ones on the PATH, else those of the image
# $HEADROOM_IMAGE run with docker. Needs kubectl with a current context
# and openssl.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
ns=${HEADROOM_NAMESPACE:-headroom}
image=${HEADROOM_IMAGE:-headroom:latest}
keys=${1:-./headroom-keys}

for tool in kubectl openssl; do
	command -v "$tool" >/dev/null 2>&1 || { echo "$0: $tool is needed" >&2; exit 1; }
done

umask 077
mkdir -p "$keys"
chmod 700 "$keys"
keys=$(cd "$keys" && pwd)

# keygen PROGRAM PREFIX: PROGRAM keygen KEY_DIR/PREFIX, from the PATH or the image
keygen() {
	if [ -f "$keys/$2.key" ] && [ -f "$keys/$2.pub" ]; then
		return 0
	fi
	if command -v "$1" >/dev/null 2>&1; then
		"$1" keygen "$keys/$2"
	elif command -v docker >/dev/null 2>&1; then
		docker run --rm --user "$(id -u):$(id -g)" -v "$keys:/keys" \
			--entrypoint "/usr/bin/$1" "$image" keygen "/keys/$2"
	else
		echo "$0: neither $1 nor docker is on the PATH" >&2
		exit 1
	fi
	echo "secrets: made $keys/$2.key and $2.pub"
}

keygen headroomd server
keygen headroom-agent agent

if [ ! -f "$keys/tls.crt" ] || [ ! -f "$keys/tls.key" ]; then
	# The names the API is reached by inside the cluster, and through
	# kubectl port-forward.
	san="DNS:headroomd,DNS:headroomd.$ns.svc,DNS:headroomd.$ns.svc.cluster.local"
	san="$san,DNS:localhost,IP:127.0.0.1"
	openssl req -x509 -newkey rsa:3072 -sha256 -days 825 -nodes -subj "/CN=headroomd" \
		-addext "subjectAltName=$san" \
		-keyout "$keys/tls.key" -out "$keys/tls.crt" 2>/dev/null
	echo "secrets: made $keys/tls.crt and tls.key (self-signed)"
fi

# Create or update each object: rendered locally, then applied.
kubectl apply -f "$here/namespace.yaml"
put() {
	kubectl -n "$ns" "$@" --dry-run=client -o yaml | kubectl apply -f -
}
put create secret generic headroomd-agent-key \
	--from-file=server.key="$keys/server.key" --from-file=server.pub="$keys/server.pub"
put create secret tls headroomd-tls --cert="$keys/tls.crt" --key="$keys/tls.key"
put create secret generic headroom-agent-key \
	--from-file=agent.key="$keys/agent.key" --from-file=agent.pub="$keys/agent.pub"
put create configmap headroomd-public-key --from-file=server.pub="$keys/server.pub"

echo "secrets: done. The agents' public key, to enroll (README.md, step 5):"
cat "$keys/agent.pub"
