#!/usr/bin/env bash
# Writes a minimal Apache config for loopback use (no systemd, no /etc/apache2) and prints its path.
#   scripts/apache-conf.sh DIR PORT [--bench]
# DIR gets httpd.conf, htdocs/, logs/; start with `apache2 -f DIR/httpd.conf -k start`.
# --bench: every path answers index.html and fixed MPM limits (the load scripts under bench/ use
# the same upstream, so their figures compare).
set -euo pipefail
dir=$1; port=$2; bench=${3:-}
mods=/usr/lib/apache2/modules
mkdir -p "$dir/htdocs" "$dir/logs"
printf '<html><body>pate-waf demo upstream</body></html>\n' > "$dir/htdocs/index.html"
cat > "$dir/httpd.conf" <<CONF
ServerRoot "$dir"
ServerName 127.0.0.1
Listen 127.0.0.1:$port
PidFile "$dir/logs/httpd.pid"
ErrorLog "$dir/logs/error.log"
LoadModule mpm_event_module $mods/mod_mpm_event.so
LoadModule authz_core_module $mods/mod_authz_core.so
LoadModule mime_module $mods/mod_mime.so
LoadModule dir_module $mods/mod_dir.so
User www-data
Group www-data
TypesConfig /etc/mime.types
DocumentRoot "$dir/htdocs"
DirectoryIndex index.html
LogFormat "%h %l %u %t \"%r\" %>s %b" common
CustomLog "$dir/logs/access.log" common
<Directory "$dir/htdocs">
  Require all granted
</Directory>
CONF
if [ "$bench" = --bench ]; then
  cat >> "$dir/httpd.conf" <<CONF
FallbackResource /index.html
StartServers 1
ServerLimit 4
ThreadsPerChild 16
MaxRequestWorkers 64
CONF
  chmod 755 "$dir" "$dir/htdocs"; chmod 644 "$dir/htdocs/index.html"
fi
echo "$dir/httpd.conf"
