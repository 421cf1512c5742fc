"""A stand-in for `dlc fuzz`'s worker that dies the way onnxruntime does on some invalid models:
it reports the phase "onnxruntime", then kills itself with SIGSEGV. (For test_fuzz.py.)"""

import json
import os
import signal
import sys

if __name__ == "__main__":
    sys.stdin.readline()
    sys.stdout.write(json.dumps({"phase": "onnxruntime"}) + "\n")
    sys.stdout.flush()
    os.kill(os.getpid(), signal.SIGSEGV)
