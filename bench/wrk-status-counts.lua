-- wrk script of bench/faults.sh and bench/soak.sh: GETs the space-separated targets of
-- $WRK_TARGETS in turn (each connection waiting $WRK_DELAY_MS ms before each request, when set)
-- and prints as its last line "requests N errors E sSTATUS N ... other N p50_ms X p99_ms Y": every
-- status answered, in order; "other" counts the answers that are neither 200 nor 403.
local targets = {}
for t in string.gmatch(os.getenv("WRK_TARGETS") or "", "[^ ]+") do targets[#targets + 1] = t end
local delay_ms = tonumber(os.getenv("WRK_DELAY_MS") or "")
local threads = {}
function setup(thread) table.insert(threads, thread) end
function init(args) counts = {}; i = 0 end
if delay_ms then function delay() return delay_ms end end
function request() i = i % #targets + 1; return wrk.format("GET", targets[i]) end
function response(status, headers, body) counts[status] = (counts[status] or 0) + 1 end
function done(summary, latency, requests)
  local total = {}
  for _, t in ipairs(threads) do
    for s, n in pairs(t:get("counts")) do total[s] = (total[s] or 0) + n end
  end
  local e = summary.errors
  local line = string.format("requests %d errors %d", summary.requests, e.connect + e.read + e.write + e.timeout)
  local keys, other = {}, 0
  for s, n in pairs(total) do
    keys[#keys + 1] = s
    if s ~= 200 and s ~= 403 then other = other + n end
  end
  table.sort(keys)
  for _, s in ipairs(keys) do line = line .. string.format(" s%d %d", s, total[s]) end
  print(line .. string.format(" other %d p50_ms %.2f p99_ms %.2f", other,
    latency:percentile(50) / 1000, latency:percentile(99) / 1000))
end
