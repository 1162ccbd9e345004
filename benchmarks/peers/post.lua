-- wrk script of benchmarks/run_http_bench.sh: every request is "POST <path>" with a 1 KiB body
-- (Content-Type text/plain, Content-Length 1024). The path comes from the URL, e.g.
--   wrk -s benchmarks/peers/post.lua http://127.0.0.1:PORT/echo
wrk.method = "POST"
wrk.body = string.rep("0123456789abcdef", 64)  -- 1024 bytes
wrk.headers["Content-Type"] = "text/plain"
