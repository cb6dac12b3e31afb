"""Writes small synthetic JTLs for the rule tests: the real JTL format, chosen outcomes per second."""
import csv

HEADER = ("timeStamp,elapsed,label,responseCode,responseMessage,threadName,dataType,success,failureMessage,"
          "bytes,sentBytes,grpThreads,allThreads,URL,Latency,IdleTime,Connect").split(",")
T0_MS = 1_795_000_000_000
TIMEOUT = ("Non HTTP response code: java.net.SocketTimeoutException", "Non HTTP response message: Read timed out")


def write_jtl(path, plan, per_second=5, elapsed_ms=20):
    """plan: [(from_s, to_s, outcome)] with outcome 'ok', 'timeout' or a float = share of successes.
    Each second gets per_second samples spread over it; timeouts take 5 s."""
    with open(path, "w", newline="") as f:
        out = csv.writer(f)
        out.writerow(HEADER)
        for start_s, end_s, outcome in plan:
            for second in range(start_s, end_s):
                for k in range(per_second):
                    ts = T0_MS + second * 1000 + k * (1000 // per_second)
                    if outcome == "ok":
                        ok = True
                    elif outcome == "timeout":
                        ok = False
                    else:  # a share: successes on the first slots of every 50 samples (10 s at 5/s)
                        ok = ((second * per_second + k) % 50) < outcome * 50
                    code, message = ("200", "") if ok else TIMEOUT
                    out.writerow([ts, elapsed_ms if ok else 5000, "get_customer", code, message, "users 1-1", "text",
                                  "true" if ok else "false", "", 100, 100, 1, 1,
                                  "http://127.0.0.1/api/customers/1", elapsed_ms, 0, 0])
    return path
