"""A C2SP transparency-log witness (``c2sp.org/tlog-witness``) and the log's side of it.

* :mod:`toolpin.witness.keys`: the witness's signing key (cosignature/v1, key type 0x04).
* :mod:`toolpin.witness.logs`: the logs a witness knows (``log <vkey> [url]`` lines).
* :mod:`toolpin.witness.state`: the latest cosigned checkpoint per log, kept on disk,
  atomically and under a cross-process lock.
* :mod:`toolpin.witness.cosigner`: the ``add-checkpoint`` decision, HTTP-free.
* :mod:`toolpin.witness.server`: ``toolpin log witness serve``, the HTTP endpoint.
* :mod:`toolpin.witness.push`: ``toolpin log witness push``: a log asks its witnesses to
  cosign its checkpoint and publishes the cosignatures it got.

The cosignature format itself is :mod:`toolpin.publog.cosignature`.
"""
