#include "client/family_cmd.h"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <vector>

#include "client/connection.h"
#include "kernels/family.h"
#include "kernels/gemm_ptx.h"
#include "kernels/validate.h"
#include "proto/dataset_file.h"
#include "tuner/device_profile.h"

namespace blocktune {
namespace {

std::string JsonString(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", c);
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

template <typename T, typename F>
std::string JsonArray(const std::vector<T>& items, F item) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i)
    out += (i ? ", " : "") + item(items[i]);
  return out + "]";
}

std::string Join(const std::vector<int64_t>& values) {
  std::string out;
  for (int64_t v : values) out += (out.empty() ? "" : ", ") + std::to_string(v);
  return out;
}

std::string FamilyJson(const KernelFamily& f) {
  std::ostringstream o;
  o << "    {\"name\": " << JsonString(f.name())
    << ", \"op\": " << JsonString(ToString(f.op()))
    << ", \"precisions\": "
    << JsonArray(f.precisions(),
                 [](DType d) { return JsonString(ToString(d)); })
    << ", \"version\": " << f.version()
    << ", \"summary\": " << JsonString(f.summary())
    << ", \"min_compute_capability\": " << f.min_compute_capability()
    << ",\n     \"parameters\": [\n";
  const auto& specs = f.params();
  for (size_t i = 0; i < specs.size(); ++i) {
    const ParamSpec& s = specs[i];
    o << "       {\"name\": " << JsonString(s.name) << ", \"values\": ["
      << Join(s.values) << "], \"meaning\": " << JsonString(s.meaning)
      << ", \"power_of_two\": " << (s.power_of_two ? "true" : "false")
      << ", \"feature\": " << JsonString(s.log_feature ? "log2" : "value")
      << "}" << (i + 1 < specs.size() ? "," : "") << "\n";
  }
  o << "     ],\n     \"rules\": "
    << JsonArray(f.rules(), [](const std::string& r) { return JsonString(r); })
    << "}";
  return o.str();
}

void PrintFamily(const KernelFamily& f, std::ostream& out) {
  out << f.name() << " (" << ToString(f.op()) << "; " << PrecisionNames(f)
      << "; version " << f.version() << "; compute capability "
      << f.min_compute_capability() / 10 << "." << f.min_compute_capability() % 10
      << " or later)\n  " << f.summary() << "\n  parameters:\n";
  size_t width = 0;
  for (const ParamSpec& s : f.params()) width = std::max(width, s.name.size());
  for (const ParamSpec& s : f.params()) {
    out << "    " << s.name << std::string(width - s.name.size() + 2, ' ')
        << s.meaning << "\n    " << std::string(width + 2, ' ') << "{"
        << Join(s.values) << "}\n";
  }
  out << "  rules:";
  for (const std::string& r : f.rules()) out << " " << r;
  out << "\n";
}

std::string Dim3(const std::array<unsigned, 3>& d) {
  return std::to_string(d[0]) + " x " + std::to_string(d[1]) + " x " +
         std::to_string(d[2]);
}

std::string Dim3Json(const std::array<unsigned, 3>& d) {
  return "[" + std::to_string(d[0]) + ", " + std::to_string(d[1]) + ", " +
         std::to_string(d[2]) + "]";
}

}  // namespace

int RunFamilies(bool json) {
  if (json) {
    std::cout << "{\"families\": [\n";
    const auto& all = Families();
    for (size_t i = 0; i < all.size(); ++i)
      std::cout << FamilyJson(*all[i]) << (i + 1 < all.size() ? "," : "")
                << "\n";
    std::cout << "]}\n";
    return kExitOk;
  }
  for (const KernelFamily* f : Families()) PrintFamily(*f, std::cout);
  return kExitOk;
}

Status CheckLocalDType(const std::string& flag, const std::string& dtype) {
  for (const char* d : {"fp32", "tf32", "bf16", "fp16"})
    if (EqualsIgnoreCase(dtype, d)) return OkStatus();
  return InvalidArgument(flag +
                         " must be one of fp32, tf32, bf16, fp16 for a kernel "
                         "generated here (--family); got '" +
                         dtype + "'");
}

int RunLocalKernel(const Context& ctx, const LocalKernelFlags& flags,
                   bool json) {
  auto found = FindFamily(flags.family);
  if (!found.ok()) return UsageError("--family: " + found.status().message());
  const KernelFamily& family = **found;
  const Op op = OpOf(ctx);
  const DType dtype = DTypeOf(ctx);
  if (family.op() != op) {
    std::string others;
    for (const KernelFamily* f : Families())
      if (f->op() == op) others += (others.empty() ? "" : ", ") + std::string(f->name());
    return UsageError("--family " + std::string(family.name()) + " computes " +
                      std::string(ToString(family.op())) + ", not " +
                      std::string(ToString(op)) + "; " +
                      std::string(ToString(op)) + " families: " + others);
  }
  if (!family.Implements(dtype)) {
    std::string others;
    for (const KernelFamily* f : FamiliesFor(op, dtype))
      others += (others.empty() ? "" : ", ") + std::string(f->name());
    return UsageError("--dtype " + std::string(ToString(dtype)) +
                      ": family " + std::string(family.name()) +
                      " implements " + PrecisionNames(family) +
                      (others.empty() ? std::string(" (no family here does)")
                                      : "; for " +
                                            std::string(ToString(dtype)) +
                                            " use --family " + others));
  }
  auto profile = ProfileByName(flags.device.empty() ? "h100" : flags.device);
  if (!profile.ok()) return UsageError("--device: " + profile.status().message());
  const KernelLimits limits = profile->Limits();
  if (limits.compute_capability < family.min_compute_capability()) {
    return UsageError(
        "--device " + profile->name + " has compute capability " +
        std::to_string(profile->cc_major) + "." +
        std::to_string(profile->cc_minor) + "; family " +
        std::string(family.name()) + " needs " +
        std::to_string(family.min_compute_capability() / 10) + "." +
        std::to_string(family.min_compute_capability() % 10) + " or later");
  }
  const std::string arch =
      flags.arch.empty()
          ? "sm_" + std::to_string(profile->cc_major * 10 + profile->cc_minor)
          : flags.arch;
  if (Status a = CheckArch("--arch", arch); !a.ok()) return UsageError(a.message());
  if (const int cc = std::atoi(arch.c_str() + 3);
      cc < family.min_compute_capability()) {
    return UsageError("--arch " + arch + ": family " +
                      std::string(family.name()) + " needs sm_" +
                      std::to_string(family.min_compute_capability()) +
                      " or later");
  }

  Problem problem(ctx);
  if (flags.lda || flags.ldb || flags.ldc) {
    if (op != Op::kGemm) return UsageError("--lda, --ldb, --ldc are for gemm");
    problem.lda = flags.lda;
    problem.ldb = flags.ldb;
    problem.ldc = flags.ldc;
  }
  // The problem itself (the leading dimensions' range) is the user's to
  // fix, whatever configuration would run it.
  if (Status checked = family.CheckProblem(problem); !checked.ok())
    return UsageError(checked.message());

  Params params;
  if (flags.params.empty()) {
    auto d = family.Default(problem, limits);
    if (!d.ok()) return StatusFailed(d.status());
    params = *d;
  } else {
    auto parsed = family.Parse(flags.params);
    if (!parsed.ok()) return UsageError("--params: " + parsed.status().message());
    params = *parsed;
  }
  if (Status can = family.CanImplement(problem, params, limits); !can.ok()) {
    if (can.code() == StatusCode::kInvalidArgument)
      return UsageError(can.message());
    return UsageError("--params \"" + family.Format(params) + "\" do not fit " +
                      profile->name + ": " + can.message());
  }
  auto kernel = family.Generate(problem, params, arch);
  if (!kernel.ok()) return StatusFailed(kernel.status());
  const GeneratedKernel& k = *kernel;

  const bool to_file = !flags.out.empty() && flags.out != "-";
  if (to_file) {
    if (Status w = WriteMaybeGzip(flags.out, k.ptx); !w.ok()) return StatusFailed(w);
  }
  if (json) {
    std::ostringstream o;
    o << "{\"family\": " << JsonString(k.family) << ", \"version\": " << k.version
      << ", \"params\": " << JsonString(family.Format(params))
      << ", \"context\": " << JsonString(ToString(ctx))
      << ", \"device_profile\": " << JsonString(profile->name)
      << ", \"arch\": " << JsonString(TargetOf(k, arch))
      << ", \"entry\": " << JsonString(k.entry)
      << ", \"grid\": " << Dim3Json(k.grid)
      << ", \"block\": " << Dim3Json(k.block)
      << ", \"cluster\": " << k.cluster
      << ", \"persistent\": " << (k.persistent ? "true" : "false")
      << ", \"dynamic_shared_bytes\": " << k.dynamic_shared_bytes
      << ", \"workspace_bytes\": " << k.workspace_bytes;
    if (!k.pack_entry.empty()) {
      o << ", \"pack_entry\": " << JsonString(k.pack_entry)
        << ", \"pack_grid\": " << Dim3Json(k.pack_grid)
        << ", \"pack_block\": " << Dim3Json(k.pack_block);
    }
    if (!k.reduce_entry.empty()) {
      o << ", \"reduce_entry\": " << JsonString(k.reduce_entry)
        << ", \"reduce_grid\": " << Dim3Json(k.reduce_grid)
        << ", \"reduce_block\": " << Dim3Json(k.reduce_block)
        << ", \"reduce_dependent\": "
        << (k.reduce_dependent ? "true" : "false");
    }
    if (!k.tensor_maps.empty()) {
      o << ", \"tensor_maps\": [";
      for (size_t i = 0; i < k.tensor_maps.size(); ++i) {
        const TensorMapParam& t = k.tensor_maps[i];
        o << (i ? ", " : "") << "{\"param\": "
          << JsonString(k.entry_params[t.param_index].name)
          << ", \"operand\": " << JsonString(std::string(1, t.operand))
          << ", \"offset\": " << t.offset
          << ", \"map\": " << JsonString(ToString(t.map)) << "}";
      }
      o << "]";
    }
    o << ", \"counter_offset\": " << k.counter_offset
      << ", \"align_a\": " << k.align_a << ", \"align_b\": " << k.align_b
      << ", \"align_c\": " << k.align_c
      << ", \"align_bytes\": " << k.align_bytes;
    if (to_file) {
      o << ", \"ptx_file\": " << JsonString(flags.out);
    } else {
      o << ", \"ptx\": " << JsonString(k.ptx);
    }
    std::cout << o.str() << "}\n";
    return kExitOk;
  }
  // With the PTX on stdout, the summary goes to stderr.
  std::ostream& out = to_file ? std::cout : std::cerr;
  if (!to_file) std::cout << k.ptx;
  out << "family: " << k.family << " (version " << k.version << ")\n"
      << "params: " << family.Format(params)
      << (flags.params.empty() ? "  (the family's default)" : "") << "\n"
      << "context: " << ToString(ctx) << "\n"
      << "device profile: " << profile->name << ", " << TargetOf(k, arch)
      << "\n"
      << "entry: " << k.entry << "\n"
      << "grid: " << Dim3(k.grid) << "\n"
      << "block: " << Dim3(k.block) << "\n"
      << (k.cluster > 1 ? "cluster: " + std::to_string(k.cluster) + "\n" : "")
      << (k.persistent ? "persistent: min(grid, SMs x resident programs per "
                         "SM) programs walk the tiles grid-stride\n"
                       : "")
      << "dynamic shared bytes: " << k.dynamic_shared_bytes
      << (k.dynamic_shared_bytes > 48 * 1024 ? " (needs the opt-in)" : "")
      << "\n"
      << "workspace bytes: " << k.workspace_bytes << "\n";
  if (!k.pack_entry.empty()) {
    out << "pack entry: " << k.pack_entry << ", grid " << Dim3(k.pack_grid)
        << ", block " << Dim3(k.pack_block)
        << " (launch before entry, same stream, entry's arguments)\n";
  }
  if (!k.reduce_entry.empty()) {
    out << "reduce entry: " << k.reduce_entry << ", grid "
        << Dim3(k.reduce_grid) << ", block " << Dim3(k.reduce_block)
        << (k.reduce_dependent
                ? " (launch after entry, same stream; it waits in "
                  "griddepcontrol.wait: a programmatic dependent launch)\n"
                : " (launch after entry, same stream)\n");
  }
  for (const TensorMapParam& t : k.tensor_maps) {
    out << "tensor map: " << k.entry_params[t.param_index].name << " = "
        << t.operand
        << (t.operand == 'W' ? "+" + std::to_string(t.offset) : std::string())
        << ", " << ToString(t.map)
        << " (encode for the operand's address, pass by value)\n";
  }
  if (k.counter_offset >= 0) {
    out << "counters: at workspace + " << k.counter_offset
        << " bytes, zero before the first launch\n";
  }
  out << "alignment: lda a multiple of " << k.align_a << ", ldb of "
      << k.align_b
      << (k.align_c > 1 ? ", ldc of " + std::to_string(k.align_c) : "")
      << " elements; operands " << k.align_bytes << "-byte aligned\n";
  if (to_file)
    out << "ptx: " << flags.out << " (" << k.ptx.size() << " bytes)\n";
  return kExitOk;
}

}  // namespace blocktune
