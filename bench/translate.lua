-- wrk script: POST /translate of one short sentence (bench/refusal_bench.sh)
wrk.method = "POST"
wrk.body   = '{"text":"Hello world.","source":"en","target":"fr"}'
wrk.headers["Content-Type"] = "application/json"
