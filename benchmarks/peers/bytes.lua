-- wrk script of benchmarks/run_file_bench.sh: prints the bytes received (heads and bodies), the
-- responses and the errors (non-2xx/3xx answers included) on one line. No response() callback:
-- with one, wrk would hand every 100 MB body to Lua as a string.
--   wrk -t1 -c4 -d10s -s benchmarks/peers/bytes.lua URL
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("result requests=%d bytes=%d duration_us=%d errors=%d\n",
    summary.requests, summary.bytes, summary.duration,
    e.connect + e.read + e.write + e.status + e.timeout))
end
