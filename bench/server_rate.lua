-- wrk script for bench/server_vs_engine.py --client wrk: POST /translate, one sentence per
-- request, the bodies (one JSON object per line of the file given as the script's argument)
-- taken in turn.  Run with -t1: one thread, each of the -c connections a closed loop.
local bodies, n, i = {}, 0, 0

function init(args)
    for line in io.lines(args[1]) do
        n = n + 1
        bodies[n] = line
    end
end

function request()
    i = i % n + 1
    return wrk.format("POST", "/translate", {["Content-Type"] = "application/json"}, bodies[i])
end
