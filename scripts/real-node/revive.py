"""A supervisord event listener (revive.conf): starts a program supervisord gave up on again.

supervisord restarts a program that exits. One that exits within startsecs of its start is tried
again after a delay one second longer each time, and after startretries such tries in a row
supervisord gives up: the program is FATAL and stays stopped. A node's daemons are never given up
on (systemd restarts a kubeadm node's kubelet forever): this starts a FATAL program again PAUSE
seconds later (on the first TICK_5 after them), and supervisord's count begins anew. Each start is
in supervisord's log; this says why on its stderr (logs/supervisor-revive.log).

Usage, as the command of an [eventlistener] of events PROCESS_STATE_FATAL and TICK_5:
    python3 revive.py PAUSE
"""

import os
import sys
import time
from xmlrpc.client import Fault

from supervisor import childutils


def log(message):
    sys.stderr.write(f'{childutils.get_asctime()} {message}\n')
    sys.stderr.flush()


def main():
    pause = float(sys.argv[1])
    rpc = childutils.getRPCInterface(os.environ)
    # group:name of each FATAL program, and when it became so.
    fatal = {}
    while True:
        childutils.listener.ready(sys.stdout)
        line = sys.stdin.readline()
        if not line:
            return  # supervisord is gone
        headers = childutils.get_headers(line)
        payload = sys.stdin.read(int(headers['len']))
        if headers['eventname'] == 'PROCESS_STATE_FATAL':
            event = childutils.get_headers(payload)
            name = f'{event["groupname"]}:{event["processname"]}'
            fatal[name] = time.monotonic()
            log(f'supervisord gave up on {name}: starting it again in {pause:g} s')
        for name, since in list(fatal.items()):
            if time.monotonic() - since < pause:
                continue
            del fatal[name]
            try:
                rpc.supervisor.startProcess(name, False)
                log(f'started {name} again')
            except Fault as fault:  # started meanwhile (supervisorctl start, scripts/real-node.sh up), or removed
                log(f'not starting {name} again: {fault.faultString}')
        childutils.listener.ok(sys.stdout)


if __name__ == '__main__':
    main()
