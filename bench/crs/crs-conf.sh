#!/usr/bin/env bash
# Writes a minimal loopback Apache config with ModSecurity 2 + OWASP CRS (Debian packages
# libapache2-mod-security2 2.9.x, modsecurity-crs 3.3.x) and prints its path.
#   bench/crs/crs-conf.sh DIR PORT PARANOIA_LEVEL [ANOMALY_THRESHOLD]
# DIR gets httpd.conf, modsecurity.conf, htdocs/, logs/ (error, access, ModSecurity audit log),
# tmp/. Start with `apache2 -f DIR/httpd.conf -k start`, stop with `-k stop`.
#
# CRS runs in anomaly-scoring mode: paranoia level 1-4 (tx.paranoia_level, rule 900000), inbound
# anomaly threshold 5 by default (rule 900110), SecRuleEngine On, request bodies inspected. A
# request CRS stops gets 403 (rule 949110 `deny`). Every other request reaches the docroot, which
# answers every path with index.html (FallbackResource), so a passed request is normally 200 —
# what matters for the benchmark is 403 (blocked by CRS) vs. anything else (passed).
set -euo pipefail
if [ $# -lt 3 ]; then
  echo "usage: $0 DIR PORT PARANOIA_LEVEL [ANOMALY_THRESHOLD]" >&2; exit 2
fi
dir=$1; port=$2; pl=$3; threshold=${4:-5}
case $pl in 1|2|3|4) ;; *) echo "$0: paranoia level must be 1-4, got '$pl'" >&2; exit 2;; esac
case $threshold in ''|*[!0-9]*) echo "$0: anomaly threshold must be a positive integer, got '$threshold'" >&2; exit 2;; esac
case $port in ''|*[!0-9]*) echo "$0: port must be a number, got '$port'" >&2; exit 2;; esac
mods=/usr/lib/apache2/modules
crs_setup=/etc/modsecurity/crs/crs-setup.conf
crs_rules=/usr/share/modsecurity-crs/rules
for f in "$mods/mod_security2.so" "$mods/mod_unique_id.so" "$crs_setup" "$crs_rules/REQUEST-949-BLOCKING-EVALUATION.conf" /etc/modsecurity/unicode.mapping; do
  [ -e "$f" ] || { echo "$0: $f is missing (apt-get install libapache2-mod-security2 modsecurity-crs)" >&2; exit 1; }
done
mkdir -p "$dir/htdocs" "$dir/logs" "$dir/tmp" "$dir/data"
dir=$(cd "$dir" && pwd)
# Apache's children run as www-data: they must reach the docroot and ModSecurity's temp dirs.
chmod 755 "$dir" "$dir/htdocs"
chmod 1777 "$dir/tmp" "$dir/data"

cat > "$dir/modsecurity.conf" <<CONF
# ModSecurity engine settings (from Debian's modsecurity.conf-recommended, engine On, paths local).
SecRuleEngine On
SecRequestBodyAccess On
SecRequestBodyLimit 13107200
SecRequestBodyNoFilesLimit 131072
SecRequestBodyInMemoryLimit 131072
SecRequestBodyLimitAction Reject
SecRule REQUEST_HEADERS:Content-Type "^(?:application(?:/soap\+|/)|text/)xml" \\
     "id:'200000',phase:1,t:none,t:lowercase,pass,nolog,ctl:requestBodyProcessor=XML"
SecRule REQUEST_HEADERS:Content-Type "^application/json" \\
     "id:'200001',phase:1,t:none,t:lowercase,pass,nolog,ctl:requestBodyProcessor=JSON"
SecRule REQBODY_ERROR "!@eq 0" \\
     "id:'200002',phase:2,t:none,log,deny,status:400,msg:'Failed to parse request body.',logdata:'%{reqbody_error_msg}',severity:2"
SecPcreMatchLimit 100000
SecPcreMatchLimitRecursion 100000
SecResponseBodyAccess Off
SecTmpDir $dir/tmp
SecDataDir $dir/data
SecAuditEngine RelevantOnly
SecAuditLogRelevantStatus "^(?:5|4(?!04))"
SecAuditLogParts ABHZ
SecAuditLogType Serial
SecAuditLog $dir/logs/modsec_audit.log
SecArgumentSeparator &
SecCookieFormat 0
SecUnicodeMapFile /etc/modsecurity/unicode.mapping 20127
SecStatusEngine Off

# OWASP CRS: Debian's setup file (anomaly scoring mode, SecDefaultAction pass), then the
# benchmark's paranoia level and thresholds, set before REQUEST-901 reads them.
Include $crs_setup
SecAction "id:900000,phase:1,nolog,pass,t:none,setvar:tx.paranoia_level=$pl"
SecAction "id:900110,phase:1,nolog,pass,t:none,setvar:tx.inbound_anomaly_score_threshold=$threshold,setvar:tx.outbound_anomaly_score_threshold=4"
Include $crs_rules/*.conf
CONF

# The loopback upstream of the other benches (scripts/apache-conf.sh --bench: every path answers
# index.html, the same MPM limits), with ModSecurity and the CRS loaded after it.
"$(dirname "$0")/../../scripts/apache-conf.sh" "$dir" "$port" --bench > /dev/null
cat >> "$dir/httpd.conf" <<CONF
LogLevel warn
LoadModule unique_id_module $mods/mod_unique_id.so
LoadModule security2_module $mods/mod_security2.so
Include "$dir/modsecurity.conf"
CONF
echo "$dir/httpd.conf"
