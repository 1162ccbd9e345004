-- wrk script of scripts/instructions.sh: ends wrk after a fixed number of responses, so that
-- two servers are measured over the same work. With one thread (-t1) the count is global. wrk
-- itself would wait out its -d duration even after thread:stop(), so the script prints
-- "responses N" and exits the process (wrk's own summary is not printed).
--   wrk -t1 -c50 -d120s -s benchmarks/peers/count.lua URL -- REQUESTS [DEPTH]
-- DEPTH > 1 pipelines: every write carries DEPTH back-to-back requests (as pipeline.lua).
local limit = 20000
local depth = 1
local seen = 0
local batch

init = function(args)
  limit = tonumber(args[1]) or limit
  depth = tonumber(args[2]) or depth
  batch = string.rep(wrk.format("GET", wrk.path), depth)
end

request = function()
  return batch
end

response = function(status, headers, body)
  seen = seen + 1
  if seen >= limit then
    io.write("responses ", seen, "\n")
    io.flush()
    os.exit(0)
  end
end
