#!/bin/sh
# certbot's manual DNS-01 hooks for dns-manager: present (or clean up) the TXT value certbot
# gives at _acme-challenge.<name> through dns-manager's httpreq endpoints.
#
# The credentials come from a file, not from the environment: `certbot renew` runs from a
# systemd timer or cron with a clean environment, and the renewal configuration keeps only the
# hook's command line (with this file's path in it), as certbot's DNS plugins keep theirs.
#
#   certbot certonly --manual --preferred-challenges dns \
#     --manual-auth-hook '/usr/local/bin/certbot-dns-manager.sh present /etc/letsencrypt/dns-manager.ini' \
#     --manual-cleanup-hook '/usr/local/bin/certbot-dns-manager.sh cleanup /etc/letsencrypt/dns-manager.ini' \
#     -d alice.example.net -d '*.alice.example.net'
#
# /etc/letsencrypt/dns-manager.ini, mode 0600 (it holds a secret), in the format of certbot's
# DNS plugins' credentials files:
#
#   dns_manager_endpoint = https://dns.example.net/rest/acme/httpreq
#   dns_manager_key = dnsm_…      (an ACME-only key is best: POST /rest/keys {"scope":"acme"})
#   dns_manager_secret = …
#   # dns_manager_ca_bundle = /etc/ssl/private-ca.pem   (only if dns-manager's certificate is
#   #                                                     from a CA the system does not trust)
#
# Needs sh, sed, stat and curl. Exits non-zero, with curl's message, when dns-manager refuses.
set -eu
PATH=${PATH:-/usr/local/bin:/usr/bin:/bin}

action=${1:-}
file=${2:-/etc/letsencrypt/dns-manager.ini}
case $action in
present | cleanup) ;;
*)
  echo "usage: $0 present|cleanup [credentials file]" >&2
  exit 2
  ;;
esac
if [ ! -r "$file" ]; then
  echo "$0: cannot read the credentials file $file" >&2
  exit 1
fi
mode=$(stat -c %a "$file")
case $mode in
600 | 400) ;;
*) echo "$0: warning: $file is mode $mode; it holds a secret: chmod 600 $file" >&2 ;;
esac

# The last `name = value` line of the file (spaces around `=` and at the ends are dropped).
setting() {
  sed -n "s/^[[:space:]]*$1[[:space:]]*=[[:space:]]*//p" "$file" | tail -n 1 | sed 's/[[:space:]]*$//'
}
endpoint=$(setting dns_manager_endpoint)
key=$(setting dns_manager_key)
secret=$(setting dns_manager_secret)
ca=$(setting dns_manager_ca_bundle)
if [ -z "$endpoint" ] || [ -z "$key" ] || [ -z "$secret" ]; then
  echo "$0: $file needs dns_manager_endpoint, dns_manager_key and dns_manager_secret" >&2
  exit 1
fi
: "${CERTBOT_DOMAIN:?certbot sets CERTBOT_DOMAIN}"
: "${CERTBOT_VALIDATION:?certbot sets CERTBOT_VALIDATION}"

# The key and secret go to curl on its standard input, never on a command line (ps shows those).
{
  printf 'user = "%s:%s"\n' "$key" "$secret"
  if [ -n "$ca" ]; then printf 'cacert = "%s"\n' "$ca"; fi
} |
  curl --config - --fail --silent --show-error --max-time 60 --retry 2 \
    -H 'Content-Type: application/json' \
    --data "{\"fqdn\":\"_acme-challenge.${CERTBOT_DOMAIN}.\",\"value\":\"${CERTBOT_VALIDATION}\"}" \
    "${endpoint%/}/$action" >/dev/null
