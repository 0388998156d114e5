#include "client/header_export_cmd.h"

#include <cctype>
#include <ctime>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include "client/header_export.h"
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

}  // namespace

StatusOr<std::vector<Context>> ReadShapesFile(const std::string& path, Op op) {
  std::ifstream in(path);
  if (!in) return InvalidArgument("--shapes: cannot read '" + path + "'");
  std::vector<Context> out;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (size_t hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    auto has = [&](const char* key) {
      return line.find(std::string(" ") + key + "=") != std::string::npos;
    };
    if (!has("dtype")) line += " dtype=fp32";
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
    auto ctx = ContextFromString(line);
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
    out.push_back(*ctx);
  }
  if (out.empty()) return InvalidArgument("--shapes: '" + path + "' names no shape");
  if (out.size() > 100000) {
    return InvalidArgument("--shapes: at most 100000 shapes, got " +
                           std::to_string(out.size()));
  }
  return out;
}

int RunHeaderExport(Connection& conn, const HeaderExportFlags& f) {
  auto op = OpFromString(f.op, "--op");
  if (!op.ok()) return UsageError(op.status().message());
  if (f.shapes.empty() == !f.all_tuned) {
    return UsageError("header export needs exactly one of --shapes FILE and --all-tuned");
  }
  HeaderSpec spec;
  spec.op = *op;
  spec.command = f.command;
  spec.generated_utc = NowUtc();
  std::set<std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t, int64_t>> seen;
  auto add_candidate = [&](const BlockShape& b) {
    if (seen.insert(b.Tie()).second) spec.candidates.push_back(b);
  };
  std::set<std::string> devices;

  if (!f.shapes.empty()) {
    auto shapes = ReadShapesFile(f.shapes, *op);
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
        HeaderEntry e;
        e.context = context;
        auto xb = FromProto(best.block_shape(), "answer");
        if (!xb.ok()) return StatusFailed(xb.status());
        e.block_shape = *xb;
        e.seconds = AnswerSeconds(best);
        e.source = q.source() == v1::QUERY_SOURCE_FALLBACK ? QuerySourceName(q)
                                                            : SourceName(best.source());
        spec.entries.push_back(e);
        for (const v1::TunedAnswer& a : q.answers()) {
          if (auto b = FromProto(a.block_shape(), "answer"); b.ok()) add_candidate(*b);
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
      auto xb = FromProto(a.block_shape(), "tuned.block_shape");
      if (!context.ok() || !xb.ok()) continue;
      devices.insert(a.device().name());
      if (spec.device.name().empty()) spec.device = a.device();
      add_candidate(*xb);
      HeaderEntry e{*context, *xb, AnswerSeconds(a), SourceName(a.source())};
      auto [it, fresh] = by_context.emplace(ToString(*context), spec.entries.size());
      if (fresh) {
        spec.entries.push_back(e);
      } else if (e.seconds > 0 && (spec.entries[it->second].seconds <= 0 ||
                                   e.seconds < spec.entries[it->second].seconds)) {
        spec.entries[it->second] = e;
      }
    }
    if (spec.entries.empty()) {
      std::cerr << "blocktune: no stored " << ToString(*op) << " answers"
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

  if (f.with_model) {
    v1::ExportRequest req;
    req.set_op(ToProto(*op));
    req.set_device_name(f.device.empty() ? spec.device.name() : f.device);
    req.set_include_models(true);
    v1::Dataset exported;
    grpc::Status s = ExportDataset(
        conn.stub(), conn.NewContext(/*stream=*/true).get(), req, &exported);
    if (!s.ok()) return CallFailed(s);
    for (const v1::Model& m : exported.models()) {
      if (!spec.model || m.id() > spec.model->id()) spec.model = m;
    }
    if (!spec.model) {
      std::cerr << "blocktune: --with-model: no trained " << ToString(*op)
                << " model" << (req.device_name().empty() ? "" : " for " + req.device_name())
                << "; train one (blocktune train --op " << ToString(*op)
                << ") or import one\n";
      return kExitServerError;
    }
    if (spec.device.name().empty()) spec.device = spec.model->device();
  }

  auto text = WriteTunedHeader(spec);
  if (!text.ok()) return StatusFailed(text.status());
  if (f.out.empty() || f.out == "-") {
    std::cout << *text;
  } else {
    std::ofstream out(f.out, std::ios::binary | std::ios::trunc);
    out << *text;
    if (!out.flush()) return StatusFailed(InvalidArgument("cannot write '" + f.out + "'"));
    std::cerr << "wrote " << f.out << ": " << spec.entries.size() << " " << ToString(*op)
              << " answers, " << spec.candidates.size() << " candidate block shapes"
              << (spec.model ? ", model " + std::to_string(spec.model->id()) : "")
              << ", " << text->size() << " bytes\n";
  }
  return kExitOk;
}

}  // namespace blocktune
