-- wrk script of benchmarks/run_http_bench.sh: HTTP/1.1 pipelining, as in TechEmpower's
-- pipeline.lua. Every write carries DEPTH (default 16) back-to-back "GET <path>" requests; wrk
-- counts each response, so req/s counts requests, not writes.
--   wrk -s benchmarks/peers/pipeline.lua http://127.0.0.1:PORT/plaintext [-- DEPTH]
local depth = 16
local batch

init = function(args)
  depth = tonumber(args[1]) or depth
  local one = wrk.format("GET", wrk.path)
  batch = string.rep(one, depth)
end

request = function()
  return batch
end
