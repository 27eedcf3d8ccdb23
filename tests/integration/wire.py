"""The wire protocol (docs/protocol.md) from Python, for tests that must
send what libgridcoll never would: hostile frames, and frames of one job on
another job's session."""

import hashlib
import hmac
import os
import struct
import zlib

from harness import check

HEADER = struct.Struct("<IBBHIIIIiIQQQQI")  # up to the reserved field
MAGIC = 0x4C4F4347
HELLO, AUTH, AUTH_OK, DATA, ERROR = 1, 2, 3, 4, 9
LAST_CHUNK = 1
ERR_BAD_FRAME, ERR_BAD_RANK, ERR_PROTOCOL = 1, 4, 8


def frame(ftype, job, payload=b"", src=0, dst=0, ctx=0, tag=0, flags=0,
          seq=0, msg_len=0, offset=0, link_seq=0, payload_len=None):
    plen = len(payload) if payload_len is None else payload_len
    head = HEADER.pack(MAGIC, 1, ftype, flags, job, src, dst, ctx, tag, plen,
                       seq, msg_len, offset, link_seq, 0)
    return head + struct.pack("<I", zlib.crc32(head)) + payload


def hello_payload(nonce, role=1):
    return (struct.pack("<HHIIIIIQQ", 1, 1, 1, role, 0, 0, 0, 0, 0) + nonce +
            b"\0" * 64)


def read_frame(sock):
    head = b""
    while len(head) < 72:
        part = sock.recv(72 - len(head))
        if not part:
            return None
        head += part
    fields = HEADER.unpack(head[:68])
    payload = b""
    while len(payload) < fields[9]:
        part = sock.recv(fields[9] - len(payload))
        if not part:
            break
        payload += part
    return fields[2], fields[8], payload  # type, tag (error code), payload


def rank_session(sock, job_id, token, rank):
    """Authenticate `sock` (connected to a relay's local endpoint) as `rank`
    of job `job_id` with `token` (bytes, as the token file holds them);
    returns the relay's answer to AUTH: (type, error code, payload)."""
    nonce = os.urandom(32)
    sock.sendall(frame(HELLO, job_id, hello_payload(nonce), src=rank))
    reply = read_frame(sock)
    if reply is None or reply[0] != HELLO:
        return reply
    relay_nonce = reply[2][40:72]
    mac = hmac.new(token, b"gridcoll-v1 initiator" + nonce + relay_nonce +
                   struct.pack("<I", rank), hashlib.sha256).digest()
    sock.sendall(frame(AUTH, job_id, mac, src=rank))
    return read_frame(sock)


def expect_error(s, code, text=None):
    reply = read_frame(s)
    check(reply is not None, "connection closed without an ERROR frame")
    ftype, tag, payload = reply
    check(ftype == ERROR and tag == code,
          "expected ERROR %d, got type %d tag %d (%r)" % (code, ftype, tag,
                                                          payload))
    if text:
        check(text in payload.decode(), "error text %r lacks %r" % (payload,
                                                                    text))
    check(read_frame(s) is None, "connection not closed after ERROR")


