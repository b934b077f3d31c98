#!/usr/bin/env bash
# Writes an nginx config for a plain loopback reverse proxy (the baseline bench/proxy.sh compares
# pate-proxy with) and prints its path.
#   bench/nginx-conf.sh DIR PORT UPSTREAM_PORT
# Start with `nginx -c DIR/nginx.conf -p DIR` (it daemonizes; DIR/nginx.pid names the master).
# One worker (pate-proxy runs `threads: 1` in the benchmark), upstream keep-alive (HTTP/1.1 to the
# upstream with a pool of idle connections, as pingora keeps), no access log (pate-proxy writes
# none per request), and the same forwarding headers pate-proxy adds (X-Forwarded-For,
# X-Forwarded-Proto, Via, an X-Request-Id): a proxy hop doing the same work minus the WAF.
# Needs Debian's nginx-light (or any nginx with the proxy and upstream keepalive modules).
set -euo pipefail
dir=$1; port=$2; upstream=$3
mkdir -p "$dir/logs" "$dir/tmp"
cat > "$dir/nginx.conf" <<CONF
worker_processes 1;
pid $dir/nginx.pid;
error_log $dir/logs/error.log warn;
events {
    worker_connections 1024;
}
http {
    access_log off;
    client_body_temp_path $dir/tmp/body;
    proxy_temp_path $dir/tmp/proxy;
    fastcgi_temp_path $dir/tmp/fastcgi;
    uwsgi_temp_path $dir/tmp/uwsgi;
    scgi_temp_path $dir/tmp/scgi;
    keepalive_requests 100000;
    upstream apache {
        server 127.0.0.1:$upstream;
        keepalive 32;
    }
    server {
        listen 127.0.0.1:$port;
        location / {
            proxy_pass http://apache;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host \$host;
            proxy_set_header X-Forwarded-For \$proxy_add_x_forwarded_for;
            proxy_set_header X-Forwarded-Proto http;
            proxy_set_header Via "1.1 nginx";
            proxy_set_header X-Request-Id \$request_id;
            proxy_buffering on;
        }
    }
}
CONF
echo "$dir/nginx.conf"
