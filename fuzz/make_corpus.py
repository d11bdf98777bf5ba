"""Writes ``corpus/``: valid and near-valid payloads of both channels, the fuzzer's seeds.

Run from the repository root: ``python fuzz/make_corpus.py``. The files are committed;
rerun it when the cases below change.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from diverge_codec import samples, stream

CORPUS = Path(__file__).with_name("corpus")

TOOLS_BEGIN = [
    b'\x00{}', b'\x00{"secrets":{}}', b'\x00{"secrets":{"k":"fixed","s":"rotating"}}',
    b'\x00{"secrets":{"k":"Fixed"}}', b'\x00{"secrets":null}', b'\x00{"secrets":["fixed"]}',
    b'\x00{"dependencies":["a"],"secrets":{"k":"rotating"}}', b'\x00[]', b'\x00',
    b'\x01{"message":"refused","argument":"region"}', b'\x01{"message":7}', b'\x01{}',
    b'\x02', b'\x02trailing', b'\x03{}', b'\x03{"s":{"token":"t","exp":1}}', b'\x03{"s":1e400}',
    b'\x03{"s":NaN}', b'\x03{"a":1,"a":2}', b'\x03\xef\xbb\xbf{}', b'\x03{"s":"\\ud800"}',
    b'\x03{"s":"\\ud83d\\ude00"}', b'\x03 {"s":18446744073709551616} ', b'\x03' + b'[' * 1024 + b']' * 1024,
    b'\x03{"s":"\xff"}', b'\x07',
]
MCP_NOTIFICATIONS = [
    b'\x00{"method":"notifications/tools/list_changed"}',
    b'\x00{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":5}}',
    b'\x00{"method":"x","params":null}', b'\x00{"method":"x","params":[]}', b'\x00{"method":"x","params":{"_meta":1}}',
    b'\x00{"method":"x","params":{"_meta":{"k":"v"}}}', b'\x00{"method":7}', b'\x00{}',
    b'\x00{"method":"m","params":{},"x":{"_meta":1}}', b'\x00{"params":{"_meta":1},"method":"m","params":{}}',
    b'\x00{"method":"m","params":{},"params":{"_meta":1}}', b'\x00{"method":"m" ,"x":{"params":{"_meta":1}}}',
    b'\x00{"method":"m","params":{"_meta":{},"_meta":"x"}}', b'\x00{"_meta":1,"method":"m","params":{"p":{"_meta":2}}}',
    b'\x01{"code":-32000,"message":"gone"}', b'\x01{"code":1,"message":"m","data":null}',
    b'\x01{"code":2147483648,"message":"m"}', b'\x01{"code":1.0,"message":"m"}', b'\x01{"code":true,"message":"m"}',
    b'\x02',
]
JSONRPC = [
    b'{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":{"id":1}}}\n',
    b'{"jsonrpc":"2.0","method":"ping","\\u0069d":1}', b'{"jsonrpc":"2.0","id":1,"result":{}}',
]


def main() -> None:
    CORPUS.mkdir(exist_ok=True)
    seeds = TOOLS_BEGIN + MCP_NOTIFICATIONS + JSONRPC
    seeds += samples.tools_begin_session() + samples.mcp_notifications_session()
    seeds.append(samples.capture(samples.tools_begin_session()))
    seeds.append(stream.record(b"\x02")[:3])  # a record cut short
    for seed in seeds:
        (CORPUS / hashlib.sha1(seed).hexdigest()[:16]).write_bytes(seed)
    print(f"{len(seeds)} seeds in {CORPUS}")


if __name__ == "__main__":
    main()
