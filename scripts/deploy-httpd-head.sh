#!/usr/bin/env bash
# Prints the head of an httpd.conf that runs deploy/apache's files on Debian's apache2 from DIR
# (no systemd, no /etc/apache2): ServerRoot DIR, pid and error log under DIR/logs (made),
# APACHE_LOG_DIR, and the modules those files use. The caller appends its Listen and Include lines.
#   scripts/deploy-httpd-head.sh DIR
set -euo pipefail
dir=$1
m=/usr/lib/apache2/modules
mkdir -p "$dir/logs"
cat <<CONF
ServerRoot "$dir"
ServerName 127.0.0.1
PidFile "$dir/logs/httpd.pid"
ErrorLog "$dir/logs/error.log"
Define APACHE_LOG_DIR $dir/logs
CONF
for module in mpm_event authz_core mime dir remoteip ssl socache_shmcb proxy proxy_http headers; do
  echo "LoadModule ${module}_module $m/mod_$module.so"
done
