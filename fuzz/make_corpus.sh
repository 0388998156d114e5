#!/usr/bin/env bash
# Writes the seed corpora of fuzz/corpus/ (committed; run again only to
# change them). Needs protoc and python3. Seeds are small valid inputs: the
# fuzzer finds the invalid ones.
set -euo pipefail
cd "$(dirname "$0")/.."
out=fuzz/corpus
proto=proto/blocktune/v1/blocktune.proto

# request: one byte for the request type (request_fuzz.cc), then the
# serialized message.
request() {  # <name> <kind byte> <message type> <text format>
  {
    printf "\\x$(printf %02x "$2")"
    protoc --proto_path=proto --encode="blocktune.v1.$3" "$proto" <<<"$4"
  } >"$out/request/$1"
}
gemm='gemm { m: 4096 n: 16 k: 4096 layout_a: LAYOUT_N layout_b: LAYOUT_T dtype: DTYPE_FP32 }'
conv='conv { n: 1 h: 56 w: 56 c: 64 k: 64 r: 3 s: 3 pad_h: 1 pad_w: 1 stride_h: 1 stride_w: 1 dilation_h: 1 dilation_w: 1 dtype: DTYPE_FP32 }'
device='name: "NVIDIA H100 80GB HBM3" cc_major: 9 cc_minor: 0 sm_count: 132 memory_bytes: 85017493504 sm_clock_mhz: 1980 memory_clock_mhz: 2619 driver_version: "13.0" cuda_version: "13.0" ptxas_version: "nvJitLink 13.0"'
xb='ml: 64 nl: 64 ms: 4 ns: 4 u: 8 kg: 1'
request query-gemm 0 QueryRequest "context { $gemm } top: 5"
request query-conv 0 QueryRequest "context { $conv } device_name: \"NVIDIA H100 80GB HBM3\" verify: true"
request batch 1 BatchQueryRequest "queries { context { $gemm } } queries { context { $conv } top: 3 fallback: true }"
request kernel-gemm 2 GetKernelRequest "context { $gemm } block_shape { $xb } arch: \"sm_90\""
request kernel-conv-split 2 GetKernelRequest "context { $conv } block_shape { ml: 32 nl: 64 ms: 2 ns: 4 u: 4 kg: 4 }"
request kernel-no-shape 2 GetKernelRequest "context { $gemm } device_name: \"NVIDIA H100 80GB HBM3\""
request campaign 3 StartCampaignRequest "spec { op: OP_GEMM dtype: DTYPE_FP32 minutes: 10 max_samples: 1000 seed: 7 label: \"nightly\" gpus: 0 gpus: 1 sampler: \"uniform\" }"
request import 4 ImportRequest "dataset { format: \"blocktune.dataset.v1\"
  samples { device { $device } campaign_id: 1 context { $gemm } block_shape { $xb } status: \"ok\" median_seconds: 0.001 spread: 0.01 repetitions: 5 sm_clock_mhz: 1980 measured_unix: 1795296670 }
  tuned { context { $conv } block_shape { $xb } device { $device } predicted_seconds: 0.0002 source: SOURCE_PREDICTED model_id: 1 updated_unix: 1795296670 }
  models { id: 1 device { $device } op: OP_GEMM architecture: \"128,128,128\" weights: \"\\001\\002\" normalization: \"{}\" training_samples: 45000 created_unix: 1795318120 libtorch_version: \"1.13.0\" } }"
request export 5 ExportRequest 'device_name: "NVIDIA H100 80GB HBM3" op: OP_CONV include_samples: true format: EXPORT_FORMAT_DATASET'

# context: context lines, some with " | " and a block shape.
ctx() { printf '%s' "$2" >"$out/context/$1"; }
ctx gemm 'gemm m=4096 n=16 k=4096 layout=NT dtype=fp32'
ctx gemm-shape 'gemm m=1024 n=1024 k=1024 layout=NN dtype=fp16 | ML=64 NL=64 MS=4 NS=4 U=8 KG=1'
ctx conv 'conv n=1 h=56 w=56 c=64 k=64 r=3 s=3 pad=1x1 stride=1x1 dilation=1x1 dtype=fp32'
ctx conv-shape 'conv n=8 h=28 w=30 c=128 k=256 r=3 s=1 pad=1,0 stride=2 dilation=1x1 dtype=bf16 | ML=32 NL=128 MS=2 NS=8 U=4 KG=2'

# domain: the shipped domains, and a small one.
cp tuner/domains/gemm.textproto tuner/domains/conv.textproto "$out/domain/"
cat >"$out/domain/small.textproto" <<'TXT'
op: "conv"
block_shape { name: "ml" values: [16, 32] }
block_shape { name: "nl" pow2_min: 16 pow2_max: 64 }
block_shape { name: "ms" values: [2] }
block_shape { name: "ns" values: [2, 4] }
block_shape { name: "u" values: [4] }
block_shape { name: "kg" values: [1, 2] }
context { name: "n" values: [1, 8] }
context { name: "hw" values: [14, 56] }
context { name: "c" pow2_min: 16 pow2_max: 64 }
context { name: "k" values: [64] }
context { name: "rs" values: [1, 3] }
context { name: "stride" values: [1, 2] }
context { name: "dilation" values: [1] }
named_contexts: "conv n=1 h=56 w=56 c=64 k=64 r=3 s=3 pad=1x1 stride=1x1 dilation=1x1 dtype=fp32"
named_fraction: 0.5
TXT

# import: a small dataset (two samples of the committed test data, a tuned
# answer, a model with stand-in weights), as JSON and gzipped.
python3 - "$out/import" <<'PY'
import gzip, json, sys
out = sys.argv[1]
with gzip.open("server/testdata/gemm-heldout.json.gz", "rt") as f:
    samples = json.load(f)["samples"][:2]
device = samples[0]["device"]
dataset = {
    "format": "blocktune.dataset.v1",
    "samples": samples,
    "tuned": [{"context": samples[1]["context"],
               "block_shape": samples[1]["block_shape"], "device": device,
               "predicted_seconds": 0.0002, "measured_seconds": 0.00021,
               "source": "SOURCE_MEASURED", "model_id": "1",
               "updated_unix": "1795296670"}],
    "models": [{"id": "1", "device": device, "op": "OP_GEMM",
                "architecture": "128,128,128", "weights": "AAECAw==",
                "normalization": "e30=", "training_samples": "45000",
                "metrics_json": "{}", "created_unix": "1795318120",
                "libtorch_version": "1.13.0"}],
}
text = json.dumps(dataset).encode()
open(f"{out}/dataset.json", "wb").write(text)
open(f"{out}/dataset.json.gz", "wb").write(gzip.compress(text, mtime=0))
open(f"{out}/empty.json", "wb").write(b'{"format": "blocktune.dataset.v1"}')
PY
