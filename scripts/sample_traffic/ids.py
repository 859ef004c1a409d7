"""Matrix identifiers and their percent-encoding as clients send them."""

import datetime
import urllib.parse

LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
B64URL = LETTERS + "0123456789-_"


def room_id(rnd, server):
    return "!" + "".join(rnd.choice(LETTERS) for _ in range(18)) + ":" + server


def event_id(rnd):
    return "$" + "".join(rnd.choice(B64URL) for _ in range(43))


def media_id(rnd):
    return "".join(rnd.choice(LETTERS) for _ in range(24))


def enc(text):
    """encodeURIComponent, as Element and most clients encode path parts."""
    return urllib.parse.quote(text, safe="-_.!~*'()")


def enc_strict(text):
    """Python's quote(safe=''), as matrix-nio and other bots encode."""
    return urllib.parse.quote(text, safe="")


def epoch_ms(start, t_ms):
    delta = start - datetime.datetime(1970, 1, 1)
    return (delta.days * 86400 + delta.seconds) * 1000 + t_ms


def sync_token(pos):
    return "s%d_%d_%d_1_29_3_1_6_0_1" % (pos, 41830 + pos // 7, 1934 + pos // 11)
