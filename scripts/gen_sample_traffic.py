#!/usr/bin/env python3
"""Generates the sample traffic shipped in examples/data/ (deterministic).

    scripts/gen_sample_traffic.py [--out examples/data] [--check]

Writes:
  sample-synapse.log  five minutes of a homeserver's request log in Synapse's
                      exact access-log format: ~150 people syncing, chatting,
                      reading, using keys and media, a bridge, federation
                      peers, and four attacks mixed in (see README.md).
  sample.tsv          ~50 lines of mxlimit's tsv format, hand-checkable.
  sample-nginx.log    ~50 lines of nginx "combined", malformed lines included.
  sample-synapse-journald.log, sample-synapse.json.log, sample-nginx-xff.log,
  sample-caddy.json.log
                      the same requests in the shapes operators' logs come
                      in: journald, TerseJson, nginx behind a load balancer,
                      Caddy (see sample_traffic/operator_formats.py).
  README.md           who is who in the samples, and figures computed from
                      the generated lines (so the prose cannot drift).

Python 3 standard library only; a fixed seed, no set iteration, no clock: two
runs write byte-identical files. --check regenerates into memory and exits 1 if
the committed files differ.
"""

import argparse
import os
import random
import sys

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sample_traffic import (attacks, model, operator_formats,  # noqa: E402
                            report, small_samples)


def generate():
    rnd = random.Random(model.SEED)
    sim = model.Simulation(rnd)
    population = model.build_population(rnd)
    model.ordinary_traffic(sim, population)
    attack_info = attacks.add_attacks(sim, population)
    lines, records = model.render_synapse_log(sim, population)
    files = {
        "sample-synapse.log": "".join(l + "\n" for l in lines),
        "sample.tsv": small_samples.tsv_sample(),
        "sample-nginx.log": small_samples.nginx_sample(),
    }
    files.update(operator_formats.files(lines, files["sample-nginx.log"]))
    files["README.md"] = report.readme(records, len(lines), attack_info,
                                       population)
    return files


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join(here, "..", "examples",
                                                      "data"))
    parser.add_argument("--check", action="store_true",
                        help="compare with the files on disk, write nothing")
    args = parser.parse_args()
    files = generate()
    if args.check:
        stale = []
        for name, text in sorted(files.items()):
            path = os.path.join(args.out, name)
            try:
                with open(path, encoding="utf-8", newline="") as f:
                    if f.read() != text:
                        stale.append(name)
            except FileNotFoundError:
                stale.append(name)
        if stale:
            print("stale: " + ", ".join(stale) + " (run " +
                  "scripts/gen_sample_traffic.py)", file=sys.stderr)
            return 1
        print("sample files are up to date")
        return 0
    os.makedirs(args.out, exist_ok=True)
    for name, text in sorted(files.items()):
        with open(os.path.join(args.out, name), "w", encoding="utf-8",
                  newline="") as f:
            f.write(text)
        print("wrote %s (%d lines)" % (os.path.join(args.out, name),
                                       text.count("\n")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
