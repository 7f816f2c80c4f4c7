"""Peak resident set of replaying 60 versus 180 one-MiB bad messages: a process that kept
messages would grow by the 120 MiB between them. Usage: memory_bound_check.py PATH-TO-faresync"""
import json, resource, subprocess, sys
def peak(n):
    with open("big-%d.jsonl" % n, "w") as f:
        for i in range(n):
            f.write(json.dumps({"topic": "reservations", "partition": 0, "offset": i, "key": "k%d" % i,
                                "payload": '{"specversion":"1.0","id":"' + str(i) + "x" * (1 << 20) + '"}'}) + "\n")
    code = "import resource, subprocess, sys; subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL); print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
    out = subprocess.run([sys.executable, "-c", code, sys.argv[1], "replay", "big-%d.jsonl" % n, "--store", "sqlite:big-%d.sqlite" % n, "--lanes", "2"],
                         check=True, capture_output=True, text=True).stdout
    return int(out.strip())
small, large = peak(60), peak(180)
print("     peak RSS: %d MiB for 60 messages of 1 MiB, %d MiB for 180" % (small // 1024, large // 1024))
sys.exit(0 if large - small < 60 * 1024 else 1)
