#include "client/header_export_cmd.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <functional>
#include <ctime>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include "client/header_export.h"
#include "kernels/block_shape.h"
#include "client/print.h"
#include "proto/convert.h"
#include "proto/dataset_file.h"
#include "proto/dataset_stream.h"

namespace blocktune {
namespace {

// Answers asked per BatchQuery call, and block shapes kept per shape as
// candidates for the embedded model.
constexpr int kBatch = 1000;
constexpr int kCandidateTop = 8;

std::string NowUtc() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

double AnswerSeconds(const v1::TunedAnswer& a) {
  return a.measured_seconds() > 0 ? a.measured_seconds() : a.predicted_seconds();
}

// An answer's configuration: its kernel (family, version, parameters by
// name), or for an answer older than families its block shape.
StatusOr<HeaderConfig> ConfigOf(const v1::TunedAnswer& a, Op op) {
  HeaderConfig c;
  if (!a.has_kernel() || a.kernel().family().empty()) {
    BT_ASSIGN_OR_RETURN(BlockShape xb, FromProto(a.block_shape(), "answer.block_shape"));
    c.family = std::string(BlockShapeFamily(op).name());
    c.version = BlockShapeFamily(op).version();
    c.params = ToParams(xb);
    return c;
  }
  const v1::KernelConfig& k = a.kernel();
  BT_ASSIGN_OR_RETURN(const KernelFamily* family, FindFamily(k.family()));
  c.family = std::string(family->name());
  c.version = k.generator_version() > 0 ? k.generator_version() : family->version();
  c.params.size = static_cast<int>(family->params().size());
  std::vector<bool> seen(family->params().size(), false);
  for (const v1::ConfigParam& p : k.params()) {
    const int i = family->ParamIndex(p.name());
    if (i < 0 || seen[i]) {
      return InvalidArgument("answer.kernel.params: '" + p.name() +
                             "' is not a parameter of " + c.family + " (or twice)");
    }
    seen[i] = true;
    c.params[i] = p.value();
  }
  for (size_t i = 0; i < seen.size(); ++i) {
    if (!seen[i]) {
      return InvalidArgument("answer.kernel.params: " + c.family + " needs " +
                             family->params()[i].name);
    }
  }
  return c;
}

}  // namespace

StatusOr<std::vector<DType>> ParseDTypeList(const std::string& text) {
  std::vector<DType> out;
  std::string word;
  std::istringstream in(text);
  while (std::getline(in, word, ',')) {
    word.erase(0, word.find_first_not_of(" \t"));
    word.erase(word.find_last_not_of(" \t") + 1);
    if (word.empty()) continue;
    BT_ASSIGN_OR_RETURN(DType d, DTypeFromString(word, "--dtype"));
    if (std::find(out.begin(), out.end(), d) == out.end()) out.push_back(d);
  }
  return out;
}

StatusOr<std::vector<Context>> ReadShapesFile(const std::string& path, Op op) {
  return ReadShapesFile(path, op, {});
}

StatusOr<std::vector<Context>> ReadShapesFile(const std::string& path, Op op,
                                              const std::vector<DType>& precisions) {
  std::ifstream in(path);
  if (!in) return InvalidArgument("--shapes: cannot read '" + path + "'");
  std::vector<Context> out;
  std::string line;
  const std::vector<DType> each =
      precisions.empty() ? std::vector<DType>{DType::kFp32} : precisions;
  for (int number = 1; std::getline(in, line); ++number) {
    if (size_t hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    auto has = [&](const char* key) {
      return line.find(std::string(" ") + key + "=") != std::string::npos;
    };
    const bool named_dtype = has("dtype");
    std::string first;
    std::istringstream(line) >> first;
    for (char& c : first) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (first == "gemm") {
      if (!has("layout")) line += " layout=NN";
    } else {
      if (!has("pad")) line += " pad=0";
      if (!has("stride")) line += " stride=1";
      if (!has("dilation")) line += " dilation=1";
    }
    for (DType d : named_dtype ? std::vector<DType>{DType::kFp32} : each) {
      auto ctx = ContextFromString(
          named_dtype ? line : line + " dtype=" + std::string(ToString(d)));
      if (!ctx.ok()) {
        return InvalidArgument(path + ":" + std::to_string(number) + ": " +
                               ctx.status().message());
      }
      if (OpOf(*ctx) != op) {
        return InvalidArgument(path + ":" + std::to_string(number) + ": a " +
                               std::string(ToString(OpOf(*ctx))) +
                               " shape in a --op " + std::string(ToString(op)) +
                               " export");
      }
      if (named_dtype && !precisions.empty() &&
          std::find(precisions.begin(), precisions.end(), DTypeOf(*ctx)) ==
              precisions.end()) {
        return InvalidArgument(path + ":" + std::to_string(number) + ": dtype " +
                               std::string(ToString(DTypeOf(*ctx))) +
                               " is not among --dtype " + [&] {
                                 std::string names;
                                 for (DType p : precisions)
                                   names += (names.empty() ? "" : ",") +
                                            std::string(ToString(p));
                                 return names;
                               }());
      }
      out.push_back(*ctx);
    }
  }
  if (out.empty()) return InvalidArgument("--shapes: '" + path + "' names no shape");
  if (out.size() > 100000) {
    return InvalidArgument("--shapes: at most 100000 shapes, got " +
                           std::to_string(out.size()));
  }
  return out;
}

// The shapes whose best answer is of a family the header cannot launch
// (gemm.wgmma, gemm.ffma_k, ...: LeaveOutInexpressible) get the best answer
// of the families it can, each asked for by name (a query of one family
// leaves the shape's stored answer as it is); the header then holds every
// shape, with what it can run. Returns a line for the summary ("" when no
// shape needed it); a shape no launchable family answers stays as it was
// and is left out with the header's note.
static StatusOr<std::string> AnswerWithLaunchableFamilies(
    Connection& conn, const std::string& device, int top, HeaderSpec* spec,
    const std::function<void(DType, const HeaderConfig&)>& add_candidate) {
  struct Asked {
    size_t entry;
    std::string family;
  };
  std::vector<Asked> asked;
  for (size_t i = 0; i < spec->entries.size(); ++i) {
    const HeaderEntry& e = spec->entries[i];
    if (HeaderExpresses(e.config.family)) continue;
    for (const KernelFamily* f : FamiliesFor(spec->op, DTypeOf(e.context))) {
      if (HeaderExpresses(std::string(f->name())))
        asked.push_back({i, std::string(f->name())});
    }
  }
  std::map<size_t, HeaderEntry> best;  // entry -> the fastest launchable
  for (size_t start = 0; start < asked.size(); start += kBatch) {
    const size_t end = std::min(asked.size(), start + kBatch);
    v1::BatchQueryRequest req;
    for (size_t j = start; j < end; ++j) {
      v1::QueryRequest* q = req.add_queries();
      ToProto(spec->entries[asked[j].entry].context, q->mutable_context());
      q->set_device_name(device);
      q->set_top(top);
      q->set_family(asked[j].family);
    }
    v1::BatchQueryResponse resp;
    auto ctx = conn.NewContext();
    ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::hours(1));
    grpc::Status s = conn.stub().BatchQuery(ctx.get(), req, &resp);
    if (!s.ok()) {
      return Status(StatusCode::kUnavailable,
                    "a query of the header's families: " + s.error_message());
    }
    for (int r = 0; r < resp.results_size(); ++r) {
      const v1::BatchQueryResult& result = resp.results(r);
      if (result.code() != 0 || result.response().answers().empty()) continue;
      const Asked& a = asked[start + r];
      const DType precision = DTypeOf(spec->entries[a.entry].context);
      for (const v1::TunedAnswer& answer : result.response().answers()) {
        if (auto c = ConfigOf(answer, spec->op); c.ok()) add_candidate(precision, *c);
      }
      const v1::TunedAnswer& first = result.response().answers(0);
      auto config = ConfigOf(first, spec->op);
      const double seconds = AnswerSeconds(first);
      if (!config.ok() || seconds <= 0) continue;
      auto it = best.find(a.entry);
      if (it == best.end() || seconds < it->second.seconds) {
        HeaderEntry e = spec->entries[a.entry];
        e.config = *config;
        e.seconds = seconds;
        e.source = SourceName(first.source());
        best[a.entry] = e;
      }
    }
  }
  if (best.empty()) return std::string();
  std::map<std::string, int> replaced_from;  // family -> shapes
  double log_slower = 0;
  int timed = 0;
  for (const auto& [i, pick] : best) {
    HeaderEntry& e = spec->entries[i];
    ++replaced_from[e.config.family];
    if (e.seconds > 0) {
      log_slower += std::log(pick.seconds / e.seconds);
      ++timed;
    }
    e = pick;
  }
  std::string from;
  for (const auto& [family, n] : replaced_from)
    from += (from.empty() ? "" : ", ") + family + " " + std::to_string(n);
  std::ostringstream line;
  line << best.size() << " of " << spec->entries.size()
       << " shapes are answered fastest by families the header cannot launch (" << from
       << "); the header has the best answer of those it can";
  if (timed > 0) {
    line.precision(3);
    line << ", " << std::exp(log_slower / timed) << "x the time (geomean)";
  }
  return line.str();
}

int RunHeaderExport(Connection& conn, const HeaderExportFlags& f) {
  auto op = OpFromString(f.op, "--op");
  if (!op.ok()) return UsageError(op.status().message());
  auto asked = ParseDTypeList(f.dtype);
  if (!asked.ok()) return UsageError(asked.status().message());
  if (f.shapes.empty() == !f.all_tuned) {
    return UsageError("header export needs exactly one of --shapes FILE and --all-tuned");
  }
  HeaderSpec spec;
  spec.op = *op;
  spec.command = f.command;
  spec.generated_utc = NowUtc();
  std::set<std::tuple<DType, std::string, Params>> seen;
  auto add_candidate = [&](DType precision, const HeaderConfig& c) {
    if (seen.insert({precision, c.family, c.params}).second)
      spec.candidates.push_back({precision, c});
  };
  std::set<std::string> devices;
  std::set<DType> precisions(asked->begin(), asked->end());

  if (!f.shapes.empty()) {
    auto shapes = ReadShapesFile(f.shapes, *op, *asked);
    if (!shapes.ok()) return UsageError(shapes.status().message());
    for (size_t start = 0; start < shapes->size(); start += kBatch) {
      v1::BatchQueryRequest req;
      const size_t end = std::min(shapes->size(), start + kBatch);
      for (size_t i = start; i < end; ++i) {
        v1::QueryRequest* q = req.add_queries();
        ToProto((*shapes)[i], q->mutable_context());
        q->set_device_name(f.device);
        q->set_top(f.with_model ? kCandidateTop : 1);
        q->set_fallback(true);
      }
      v1::BatchQueryResponse resp;
      auto ctx = conn.NewContext();
      ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::hours(1));
      grpc::Status s = conn.stub().BatchQuery(ctx.get(), req, &resp);
      if (!s.ok()) return CallFailed(s);
      for (int i = 0; i < resp.results_size(); ++i) {
        const v1::BatchQueryResult& r = resp.results(i);
        const Context& context = (*shapes)[start + i];
        if (r.code() != 0 || r.response().answers().empty()) {
          std::cerr << "blocktune: " << ToString(context) << ": " << r.message() << "\n";
          return kExitServerError;
        }
        const v1::QueryResponse& q = r.response();
        const v1::TunedAnswer& best = q.answers(0);
        auto config = ConfigOf(best, *op);
        if (!config.ok()) return StatusFailed(config.status());
        HeaderEntry e;
        e.context = context;
        e.config = *config;
        e.seconds = AnswerSeconds(best);
        e.source = q.source() == v1::QUERY_SOURCE_FALLBACK ? QuerySourceName(q)
                                                            : SourceName(best.source());
        spec.entries.push_back(e);
        precisions.insert(DTypeOf(context));
        for (const v1::TunedAnswer& a : q.answers()) {
          if (auto c = ConfigOf(a, *op); c.ok()) add_candidate(DTypeOf(context), *c);
          if (!a.device().name().empty()) {
            devices.insert(a.device().name());
            if (spec.device.name().empty()) spec.device = a.device();
          }
        }
      }
    }
  } else {
    v1::ExportRequest req;
    req.set_op(ToProto(*op));
    req.set_device_name(f.device);
    v1::Dataset exported;
    grpc::Status s = ExportDataset(
        conn.stub(), conn.NewContext(/*stream=*/true).get(), req, &exported);
    if (!s.ok()) return CallFailed(s);
    // The fastest stored answer per context; every answer a candidate.
    std::map<std::string, size_t> by_context;
    for (const v1::TunedAnswer& a : exported.tuned()) {
      auto context = FromProto(a.context(), "tuned.context");
      if (!context.ok()) continue;
      const DType precision = DTypeOf(*context);
      if (!asked->empty() && std::count(asked->begin(), asked->end(), precision) == 0)
        continue;
      auto config = ConfigOf(a, *op);
      if (!config.ok()) continue;
      devices.insert(a.device().name());
      if (spec.device.name().empty()) spec.device = a.device();
      precisions.insert(precision);
      add_candidate(precision, *config);
      HeaderEntry e{*context, *config, AnswerSeconds(a), SourceName(a.source())};
      auto [it, fresh] = by_context.emplace(ToString(*context), spec.entries.size());
      if (fresh) {
        spec.entries.push_back(e);
      } else if (e.seconds > 0 && (spec.entries[it->second].seconds <= 0 ||
                                   e.seconds < spec.entries[it->second].seconds)) {
        spec.entries[it->second] = e;
      }
    }
    if (spec.entries.empty()) {
      std::cerr << "blocktune: no stored " << ToString(*op)
                << (f.dtype.empty() ? "" : " " + f.dtype) << " answers"
                << (f.device.empty() ? "" : " for device '" + f.device + "'")
                << "; query some shapes first, or use --shapes FILE\n";
      return kExitServerError;
    }
  }
  if (devices.size() > 1) {
    std::string names;
    for (const std::string& d : devices) names += (names.empty() ? "" : ", ") + d;
    return UsageError("the answers come from several devices (" + names +
                      "); choose one with --device");
  }
  auto launchable = AnswerWithLaunchableFamilies(
      conn, f.device.empty() ? spec.device.name() : f.device,
      f.with_model ? kCandidateTop : 1, &spec, add_candidate);
  if (!launchable.ok()) return StatusFailed(launchable.status());
  if (!launchable->empty()) std::cerr << "blocktune: " << *launchable << "\n";

  if (f.with_model) {
    v1::ExportRequest req;
    req.set_op(ToProto(*op));
    req.set_device_name(f.device.empty() ? spec.device.name() : f.device);
    req.set_include_models(true);
    v1::Dataset exported;
    grpc::Status s = ExportDataset(
        conn.stub(), conn.NewContext(/*stream=*/true).get(), req, &exported);
    if (!s.ok()) return CallFailed(s);
    // The newest model of each (precision, family) of the header.
    std::map<std::pair<DType, std::string>, const v1::Model*> newest;
    for (const v1::Model& m : exported.models()) {
      auto precision = ContextDTypeFromProto(m.dtype(), "model.dtype");
      if (!precision.ok() || precisions.count(*precision) == 0) continue;
      const std::string family =
          m.family().empty() ? std::string(BlockShapeFamily(*op).name()) : m.family();
      const v1::Model*& slot = newest[{*precision, family}];
      if (slot == nullptr || m.id() > slot->id()) slot = &m;
    }
    for (const auto& [key, m] : newest) spec.models.push_back(*m);
    if (spec.models.empty()) {
      std::string names;
      for (DType d : precisions) names += (names.empty() ? "" : ",") + std::string(ToString(d));
      std::cerr << "blocktune: --with-model: no trained " << ToString(*op) << " " << names
                << " model" << (req.device_name().empty() ? "" : " for " + req.device_name())
                << "; train one (blocktune train --op " << ToString(*op)
                << ") or import one\n";
      return kExitServerError;
    }
    for (DType d : precisions) {
      bool any = false;
      for (const auto& [key, m] : newest) any = any || key.first == d;
      if (!any) {
        std::cerr << "blocktune: --with-model: no " << ToString(*op) << " "
                  << ToString(d) << " model; its shapes not in the table get the "
                  << "nearest answer\n";
      }
    }
    if (spec.device.name().empty()) spec.device = spec.models.front().device();
  }

  auto text = WriteTunedHeader(spec);
  if (!text.ok()) return StatusFailed(text.status());
  if (f.out.empty() || f.out == "-") {
    std::cout << *text;
  } else {
    std::ofstream out(f.out, std::ios::binary | std::ios::trunc);
    out << *text;
    if (!out.flush()) return StatusFailed(InvalidArgument("cannot write '" + f.out + "'"));
    // What the header holds: the families it cannot launch are left out.
    std::string note;
    std::vector<std::string> left_out;
    const HeaderSpec kept = LeaveOutInexpressible(spec, &note, &left_out);
    std::string models;
    for (const v1::Model& m : kept.models) {
      models += ", model " + std::to_string(m.id()) + " (" +
                (m.family().empty() ? std::string(BlockShapeFamily(*op).name()) : m.family()) +
                ")";
    }
    std::string left;
    for (const std::string& family : left_out) left += (left.empty() ? "" : ", ") + family;
    std::cerr << "wrote " << f.out << ": " << kept.entries.size() << " " << ToString(*op)
              << " answers, " << kept.candidates.size() << " candidate configurations"
              << models << ", " << text->size() << " bytes"
              << (left.empty() ? "" : "; left out (the header cannot launch them): " + left)
              << "\n";
  }
  return kExitOk;
}

}  // namespace blocktune
