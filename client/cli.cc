#include "client/cli.h"

#include <google/protobuf/util/json_util.h>

#include <CLI/CLI.hpp>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>

#include "client/connection.h"
#include "client/family_cmd.h"
#include "client/header_export_cmd.h"
#include "client/print.h"
#include "kernels/family.h"
#include "proto/convert.h"
#include "proto/dataset_file.h"
#include "proto/dataset_stream.h"
#include "tuner/device_profile.h"
#include "tuner/sample_report.h"
#include "tuner/sampler.h"

namespace blocktune {
namespace {

// Decimal digits only: CLI11 reads "-1" into an unsigned flag as 2^64 - 1.
const CLI::Validator kWholeNumber(
    [](std::string& text) -> std::string {
      if (!text.empty() && text.find_first_not_of("0123456789") == std::string::npos)
        return "";
      return "must be a whole number, 0 or more; got '" + text + "'";
    },
    "UINT");

// A decimal integer as written: CLI11 reads "010" as octal 8 and "0x10" as
// 16, and "9223372036854775808" as 2^63 - 1; each of those is refused here
// (the ranges are checked with the context, naming the field).
const CLI::Validator kDecimal(
    [](std::string& text) -> std::string {
      const size_t digits = text.size() - (!text.empty() && text[0] == '-');
      const std::string body = text.substr(text.size() - digits);
      if (digits >= 1 && digits <= 18 &&
          body.find_first_not_of("0123456789") == std::string::npos &&
          (body == "0" || body[0] != '0'))
        return "";
      return "must be a decimal integer (at most 18 digits, no leading zero); got '" +
             text + "'";
    },
    "INT");

// Flags shared by every subcommand.
struct Globals {
  ConnectionOptions connection;
  bool json = false;
};

// Context flags of `query` and `kernel`; defaults are the CLI's, the API
// has none.
struct GemmFlags {
  int64_t m = 0, n = 0, k = 0;
  std::string layout = "NN";
  std::string dtype = "fp32";
};

struct ConvFlags {
  int64_t n = 0, h = 0, w = 0, c = 0, k = 0, r = 0, s = 0;
  std::string pad = "0", stride = "1", dilation = "1";
  std::string dtype = "fp32";
};

struct QueryFlags {
  std::string device;
  int top = 1;
  bool verify = false;
  bool fallback = false;
  std::string family;
};

struct KernelFlags {
  std::string block_shape;
  std::string device;
  std::string arch;
  std::string out;  // the PTX goes here; "" or "-": stdout
  // --family: generate here, no daemon (family_cmd.h); with --daemon, the
  // daemon's best answer of that family, or with --params that
  // configuration.
  std::string family;
  bool daemon = false;
  std::string params;
  int64_t lda = 0, ldb = 0, ldc = 0;
};





struct SampleFlags {
  std::string op = "gemm";
  std::string sampler = "bayes";
  int64_t count = 10000;
  std::string profile = "h100";
  uint64_t seed = 1;
  std::string domain;
  std::vector<std::string> rules = {"power_of_two", "min_block_elements",
                                    "split_has_work", "max_work",
                                    "working_set", "occupancy"};
  bool rules_given = false;  // --rules on the command line
  double rho = 0.5;
  double alpha = 100;
  int64_t warmup = 20000;
  bool list = false;
};

// `blocktune sample`: runs here, no daemon. Bad flags exit 2 naming the
// flag; a missing GPU for --device-profile gpu exits 3.
int RunSample(const SampleFlags& f, bool json) {
  auto parsed_op = OpFromString(f.op, "--op");
  if (!parsed_op.ok()) return UsageError(parsed_op.status().message());
  const Op op = *parsed_op;
  if (f.sampler != "uniform" && f.sampler != "bayes")
    return UsageError("--sampler must be uniform or bayes, got '" + f.sampler + "'");
  if (f.count < 1 || f.count > 100'000'000)
    return UsageError("--count must be in [1, 100000000], got " +
                      std::to_string(f.count));
  if (f.warmup < 1 || f.warmup > 10'000'000)
    return UsageError("--warmup must be in [1, 10000000], got " +
                      std::to_string(f.warmup));
  if (!(f.alpha > 0 && f.alpha <= 1e9))
    return UsageError("--alpha must be in (0, 1e9], got " + std::to_string(f.alpha));
  StatusOr<DeviceProfile> profile = f.profile == "gpu"
                                        ? ProfileFromDevice(0)
                                        : ProfileByName(f.profile);
  if (!profile.ok()) {
    if (profile.status().code() == StatusCode::kUnavailable)
      return StatusFailed(profile.status());
    return UsageError("--device-profile: " + profile.status().message());
  }
  StatusOr<Domain> domain = DefaultDomain(op);
  if (!f.domain.empty()) {
    std::ifstream in(f.domain);
    if (!in) return UsageError("--domain: cannot read '" + f.domain + "'");
    std::stringstream text;
    text << in.rdbuf();
    domain = ParseDomain(text.str());
    if (domain.ok() && domain->op != op)
      return UsageError("--domain: '" + f.domain + "' is a " +
                        std::string(ToString(domain->op)) + " domain, not " +
                        std::string(ToString(op)));
  }
  if (!domain.ok()) return UsageError("--domain: " + domain.status().message());
  // The default rules less those the domain skips (gemm.gemv's
  // min_block_elements); --rules as given when it is given.
  std::vector<std::string> wanted = f.rules;
  if (!f.rules_given) {
    for (const std::string& skip : domain->skip_rules)
      wanted.erase(std::remove(wanted.begin(), wanted.end(), skip), wanted.end());
  }
  auto rules = RuleSet::Make(*domain->family, *profile, wanted, f.rho);
  if (!rules.ok()) return UsageError("--rules/--rho: " + rules.status().message());
  SamplingOptions options;
  options.sampler = f.sampler;
  options.count = f.count;
  options.seed = f.seed;
  options.alpha = f.alpha;
  options.warmup_accepted = f.warmup;
  // Enough for acceptance down to 1e-5; the report says if it fell short.
  options.max_draws = std::max<int64_t>(100'000'000, f.count * 100'000);
  std::vector<Candidate> accepted;
  auto report = RunSampling(*domain, *profile, *rules, options,
                            f.list ? &accepted : nullptr);
  if (!report.ok()) return UsageError(report.status().message());
  tuner::SamplingReport proto = ToProto(*report, accepted);
  if (json) {
    std::cout << ToJson(proto);
  } else {
    PrintReport(proto, std::cout);
  }
  if (report->accepted < f.count) {
    std::cerr << "blocktune: only " << report->accepted << " of " << f.count
              << " accepted within " << options.max_draws << " draws\n";
    return kExitServerError;
  }
  return kExitOk;
}

// The precisions a family implements, and so the only ones a query,
// kernel, training, campaign or export can name. fp64 parses as a DType
// (stored data may name it) but nothing tunes it: refused here, with why.
constexpr const char* kDTypes = "fp32, tf32, bf16, fp16";

StatusOr<DType> DTypeFlag(const std::string& text) {
  auto d = DTypeFromString(text, "--dtype");
  if (d.ok() && *d == DType::kFp64) {
    return InvalidArgument(std::string("--dtype must be one of ") + kDTypes +
                           "; got '" + text +
                           "' (no kernel family implements fp64)");
  }
  if (!d.ok()) {
    return InvalidArgument(std::string("--dtype must be one of ") + kDTypes +
                           "; got '" + text + "'");
  }
  return *d;
}

void AddGemmFlags(CLI::App* cmd, GemmFlags* f) {
  cmd->add_option("--m", f->m, "rows of A and C")->check(kDecimal)->required();
  cmd->add_option("--n", f->n, "columns of B and C")->check(kDecimal)->required();
  cmd->add_option("--k", f->k, "the reduction")->check(kDecimal)->required();
  cmd->add_option("--layout", f->layout,
                  "layouts of A and B, N or T each: NN, NT, TN, TT")
      ->capture_default_str();
  cmd->add_option("--dtype", f->dtype, "precision: fp32, tf32, bf16 or fp16")
      ->capture_default_str();
}

void AddConvFlags(CLI::App* cmd, ConvFlags* f) {
  cmd->add_option("--n", f->n, "batch")->check(kDecimal)->required();
  cmd->add_option("--h", f->h, "input height")->check(kDecimal)->required();
  cmd->add_option("--w", f->w, "input width")->check(kDecimal)->required();
  cmd->add_option("--c", f->c, "input channels")->check(kDecimal)->required();
  cmd->add_option("--k", f->k, "output channels")->check(kDecimal)->required();
  cmd->add_option("--r", f->r, "filter height")->check(kDecimal)->required();
  cmd->add_option("--s", f->s, "filter width")->check(kDecimal)->required();
  cmd->add_option("--pad", f->pad, "padding: P, or PH,PW")->capture_default_str();
  cmd->add_option("--stride", f->stride, "stride: S, or SH,SW")
      ->capture_default_str();
  cmd->add_option("--dilation", f->dilation, "dilation: D, or DH,DW")
      ->capture_default_str();
  cmd->add_option("--dtype", f->dtype, "precision: fp32, tf32, bf16 or fp16")
      ->capture_default_str();
}

void AddQueryFlags(CLI::App* cmd, QueryFlags* f) {
  cmd->add_option("--device", f->device, "device name (default: any)");
  cmd->add_option("--top", f->top, "answers wanted, 1 to 100")
      ->capture_default_str();
  cmd->add_flag("--verify", f->verify, "re-benchmark the answers on the GPU");
  cmd->add_flag("--fallback", f->fallback,
                "with no stored answer and no model, answer the nearest "
                "stored context's configuration, or a default one");
  cmd->add_option("--family", f->family,
                  "only this kernel family, e.g. gemm.mma (default: every "
                  "family of the precision; see blocktune families)");
}

StatusOr<Context> GemmFromFlags(const GemmFlags& f) {
  GemmContext g;
  g.m = f.m;
  g.n = f.n;
  g.k = f.k;
  if (f.layout.size() != 2) {
    return InvalidArgument("--layout must be two letters, N or T each (NN, "
                           "NT, TN, TT), got '" + f.layout + "'");
  }
  BT_ASSIGN_OR_RETURN(g.layout_a, LayoutFromString(f.layout.substr(0, 1),
                                                   "--layout (A)"));
  BT_ASSIGN_OR_RETURN(g.layout_b, LayoutFromString(f.layout.substr(1, 1),
                                                   "--layout (B)"));
  BT_ASSIGN_OR_RETURN(g.dtype, DTypeFlag(f.dtype));
  BT_RETURN_IF_ERROR(Validate(g, "gemm"));
  return Context(g);
}

StatusOr<Context> ConvFromFlags(const ConvFlags& f) {
  ConvContext c;
  c.n = f.n;
  c.h = f.h;
  c.w = f.w;
  c.c = f.c;
  c.k = f.k;
  c.r = f.r;
  c.s = f.s;
  BT_RETURN_IF_ERROR(ParseWindowPair("--pad", f.pad, &c.pad_h, &c.pad_w));
  BT_RETURN_IF_ERROR(
      ParseWindowPair("--stride", f.stride, &c.stride_h, &c.stride_w));
  BT_RETURN_IF_ERROR(
      ParseWindowPair("--dilation", f.dilation, &c.dilation_h, &c.dilation_w));
  BT_ASSIGN_OR_RETURN(c.dtype, DTypeFlag(f.dtype));
  BT_RETURN_IF_ERROR(Validate(c, "conv"));
  return Context(c);
}

template <typename Response>
int Emit(const Globals& g, const Response& response) {
  if (g.json) std::cout << ToJson(response);
  else Print(response, std::cout);
  return kExitOk;
}

// A training lasts as long as its call. It has no deadline unless
// `timeout_s` is set (--timeout given): the 60 s default is meant for
// single answers, and a training takes minutes. There is no cancel call:
// Ctrl-C ends the CLI (SIGINT's default action), the connection closes,
// and the daemon takes that as the call's cancellation and stops the
// training within about a second, storing nothing.
int RunTrain(Connection& conn, const Globals& g,
             const v1::TrainModelRequest& req, std::optional<int> timeout_s) {
  auto context = conn.NewContext(/*stream=*/true);
  if (timeout_s) {
    context->set_deadline(std::chrono::system_clock::now() +
                          std::chrono::seconds(*timeout_s));
  }
  auto reader = conn.stub().TrainModel(context.get(), req);
  v1::TrainProgress progress;
  while (reader->Read(&progress)) {
    if (g.json) {
      std::cout << ToJson(progress);
    } else {
      Print(progress, std::cout);
    }
    std::cout.flush();
  }
  grpc::Status status = reader->Finish();
  if (status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED && timeout_s) {
    // The client's own deadline ends the call with gRPC's bare "Deadline
    // Exceeded"; say what it means for the training.
    std::cerr << "blocktune: DEADLINE_EXCEEDED: the training did not end "
                 "within --timeout "
              << *timeout_s
              << " s; blocktuned stops it and stores nothing (give a larger "
                 "--timeout, or none for no limit)\n";
    return ExitCodeFor(status);
  }
  return status.ok() ? kExitOk : CallFailed(status);
}

// A live bar on a terminal, a line per update otherwise, JSON with --json.
// Ends with the campaign's final state, and fails unless it is done.
int WatchProgress(const Globals& g,
                  grpc::ClientReader<v1::CampaignProgress>* reader) {
  const bool live = !g.json && isatty(STDOUT_FILENO);
  v1::CampaignProgress p;
  v1::CampaignProgress last;
  bool any = false;
  while (reader->Read(&p)) {
    any = true;
    last = p;
    if (g.json) std::cout << ToJson(p);
    else if (live) std::cout << "\r\033[K" << ProgressLine(p, 30);
    else std::cout << ProgressLine(p, 0) << "\n";
    std::cout.flush();
  }
  if (live) std::cout << "\n";
  grpc::Status status = reader->Finish();
  if (!status.ok()) return CallFailed(status);
  if (!g.json && any) Print(last.campaign(), std::cout);
  return !any || last.campaign().state() == v1::CAMPAIGN_STATE_DONE
             ? kExitOk
             : kExitCampaignFailed;
}

int RunQuery(Connection& conn, const Globals& g, const Context& ctx,
             const QueryFlags& f) {
  if (f.top < 1 || f.top > 100)
    return UsageError("--top must be in [1, 100], got " + std::to_string(f.top));
  v1::QueryRequest req;
  ToProto(ctx, req.mutable_context());
  req.set_device_name(f.device);
  req.set_top(f.top);
  req.set_verify(f.verify);
  req.set_fallback(f.fallback);
  req.set_family(f.family);
  v1::QueryResponse resp;
  grpc::Status status = conn.stub().Query(conn.NewContext().get(), req, &resp);
  return status.ok() ? Emit(g, resp) : CallFailed(status);
}

// -o FILE: the PTX goes to FILE and a summary (or, with --json, the whole
// response) to stdout; without -o, the PTX (or the JSON) to stdout.
int RunKernel(Connection& conn, const Globals& g, const Context& ctx,
              const KernelFlags& f) {
  v1::GetKernelRequest req;
  ToProto(ctx, req.mutable_context());
  if (!f.block_shape.empty()) {
    auto xb = BlockShapeFromString(f.block_shape);
    if (!xb.ok()) return UsageError("--block-shape: " + xb.status().message());
    ToProto(*xb, req.mutable_block_shape());
  }
  if (!f.params.empty()) {
    // Parsed by this binary's copy of the family, so a typo is a usage
    // error here; the daemon checks again against its own.
    auto family = FindFamily(f.family);
    if (!family.ok()) return UsageError("--family: " + family.status().message());
    auto params = (*family)->Parse(f.params);
    if (!params.ok()) return UsageError("--params: " + params.status().message());
    v1::KernelConfig* k = req.mutable_kernel();
    k->set_family(f.family);
    for (int i = 0; i < params->size; ++i) {
      v1::ConfigParam* p = k->add_params();
      p->set_name((*family)->params()[i].name);
      p->set_value((*params)[i]);
    }
  } else {
    req.set_family(f.family);
  }
  if (!f.arch.empty()) {
    if (Status a = CheckArch("--arch", f.arch); !a.ok()) return UsageError(a.message());
  }
  req.set_device_name(f.device);
  req.set_arch(f.arch);
  v1::GetKernelResponse resp;
  grpc::Status status =
      conn.stub().GetKernel(conn.NewContext().get(), req, &resp);
  if (!status.ok()) return CallFailed(status);
  const bool to_file = !f.out.empty() && f.out != "-";
  if (to_file) {
    if (Status w = WriteMaybeGzip(f.out, resp.ptx()); !w.ok()) return StatusFailed(w);
  }
  if (g.json) {
    std::cout << ToJson(resp);
  } else if (to_file) {
    PrintKernelSummary(resp, std::cout);
    std::cout << "ptx: " << f.out << " (" << resp.ptx().size() << " bytes)\n";
  } else {
    std::cout << resp.ptx();
  }
  return kExitOk;
}

int RunExport(Connection& conn, const Globals& g, const std::string& out_path,
              v1::ExportRequest req) {
  v1::Dataset dataset;
  // The whole export is one stream: no per-call deadline.
  grpc::Status status =
      ExportDataset(conn.stub(), conn.NewContext(/*stream=*/true).get(), req,
                    &dataset);
  if (!status.ok()) return CallFailed(status);
  std::string text = ToJson(dataset);
  if (out_path.empty() || out_path == "-") {
    std::cout << text;
    return kExitOk;
  }
  if (Status w = WriteMaybeGzip(out_path, text); !w.ok()) return StatusFailed(w);
  std::cerr << "wrote " << dataset.tuned_size() << " tuned answers, "
            << dataset.samples_size() << " samples, " << dataset.models_size()
            << " models to " << out_path << "\n";
  return kExitOk;
}

int RunImport(Connection& conn, const Globals& g, const std::string& path) {
  // Bounded by kMaxDatasetFileBytes: a device or an endless pipe is refused
  // instead of filling memory.
  auto dataset = ReadDatasetFile(path);
  if (!dataset.ok()) return UsageError("import: " + dataset.status().message());
  v1::ImportResponse resp;
  grpc::Status status =
      ImportDataset(conn.stub(), conn.NewContext(/*stream=*/true).get(),
                    std::move(*dataset), &resp);
  if (!status.ok()) return CallFailed(status);
  if (g.json) {
    std::cout << ToJson(resp);
  } else {
    std::cout << "imported " << resp.tuned() << " tuned answers, "
              << resp.samples() << " samples, " << resp.models()
              << " models\n";
    if (resp.relabeled_samples() > 0) {
      std::cout << resp.relabeled_samples()
                << " samples of an older generator version were stored as "
                   "current: this blocktune's generator emits the same "
                   "kernel for them (the same kernel digest)\n";
    }
  }
  return kExitOk;
}

// --server, --json and the connection flags, on `cmd` and every subcommand
// below it, so each subcommand's --help lists them.
void AddSharedFlags(CLI::App* cmd, Globals* g) {
  cmd->add_option("--server", g->connection.server,
                  "blocktuned address, host:port or unix:PATH "
                  "(env BLOCKTUNE_SERVER)")
      ->capture_default_str();
  cmd->add_flag("--json", g->json, "print results as JSON");
  cmd->add_option("--token-file", g->connection.token_file,
                  "send the token in this file (env BLOCKTUNE_TOKEN_FILE)");
  cmd->add_option("--tls-ca", g->connection.tls_ca,
                  "use TLS, trusting these PEM roots");
  cmd->add_option("--timeout", g->connection.timeout_s,
                  "seconds per call (train: no limit unless given)")
      ->capture_default_str()
      ->check(CLI::Range(1, 86400));
  for (CLI::App* sub : cmd->get_subcommands({})) AddSharedFlags(sub, g);
}

StatusOr<v1::Op> OpFlag(const std::string& text, bool required) {
  if (text.empty() && !required) return v1::OP_UNSPECIFIED;
  BT_ASSIGN_OR_RETURN(Op op, OpFromString(text, "--op"));
  return ToProto(op);
}

}  // namespace

int RunCli(int argc, char** argv) {
  Globals g;
  if (const char* server = std::getenv("BLOCKTUNE_SERVER"))
    g.connection.server = server;
  if (const char* token = std::getenv("BLOCKTUNE_TOKEN_FILE"))
    g.connection.token_file = token;

  CLI::App app{"blocktune: ask blocktuned for the best kernel of a GEMM "
               "or convolution, run tuning campaigns, move tuned data."};
  app.require_subcommand(1);
  auto* health = app.add_subcommand("health", "is the daemon up, and what it holds");
  auto* devices = app.add_subcommand("devices", "GPUs known to the store");

  auto* campaign = app.add_subcommand("campaign", "tuning campaigns");
  campaign->require_subcommand(1);
  std::string campaign_op = "gemm", campaign_dtype = "fp32";
  v1::CampaignSpec spec;
  std::vector<int> gpus;
  std::string sampler = "bayes";
  bool watch_after_start = false;
  int64_t minutes = 0, max_samples = 0;
  uint64_t seed = 0;
  std::string label;
  auto* c_start = campaign->add_subcommand("start", "start a campaign");
  c_start->add_option("--op", campaign_op, "gemm or conv")->capture_default_str();
  c_start->add_option("--dtype", campaign_dtype,
                      "precision: fp32, tf32, bf16 or fp16")
      ->capture_default_str();
  std::vector<std::string> campaign_families;
  c_start->add_option("--family", campaign_families,
                      "kernel families to sample, repeated or comma-separated "
                      "(default: every family of the op and precision)")
      ->delimiter(',');
  bool retune_stale = false;
  c_start->add_flag("--retune-stale", retune_stale,
                    "re-measure the stored contexts and parameters of stale "
                    "samples (older generator versions) with the current "
                    "generators, instead of sampling (within --minutes or "
                    "--max-samples)");
  double min_flops = 0, max_flops = 0;
  c_start->add_option("--min-flops", min_flops,
                      "draw only contexts of at least this much work, "
                      "2*M*N*K flop (0: no lower bound), e.g. 6.9e10 with "
                      "--max-flops 1.1e12 for large products");
  c_start->add_option("--max-flops", max_flops,
                      "draw only contexts of at most this much work, "
                      "2*M*N*K flop, up to 1.1e15 (0: the default, 2^36 = "
                      "6.9e10)");
  c_start->add_option("--gpus", gpus, "GPU ordinals, e.g. 0,1 (default: all)")
      ->delimiter(',');
  c_start->add_option("--sampler", sampler,
                      "bayes, uniform, or guided: measure the current "
                      "models' own 6 fastest predictions and 2 of their "
                      "ranks 7-64 in contexts drawn from each family's "
                      "domain (needs --max-samples and a trained model of "
                      "the GPU)")
      ->capture_default_str();
  c_start->add_flag("--watch", watch_after_start,
                    "follow its progress until it ends");
  c_start->add_option("--minutes", minutes, "time budget");
  c_start->add_option("--max-samples", max_samples, "sample budget");
  c_start->add_option("--seed", seed, "sampler seed")
      ->check(kWholeNumber)
      ->capture_default_str();
  c_start->add_option("--label", label, "a note for people");
  int64_t campaign_id = 0;
  auto* c_watch = campaign->add_subcommand("watch", "follow a campaign's progress");
  c_watch->add_option("id", campaign_id, "campaign id")->required();
  auto* c_list = campaign->add_subcommand("list", "every campaign");
  auto* c_cancel = campaign->add_subcommand("cancel", "stop a campaign");
  c_cancel->add_option("id", campaign_id, "campaign id")->required();

  auto* train = app.add_subcommand("train", "train the surrogate on the samples");
  std::string train_op, train_device;
  std::vector<int> layers;
  int epochs = 0;
  train->add_option("--op", train_op, "gemm or conv")->required();
  train->add_option("--device", train_device, "device name");
  train->add_option("--hidden,--layers", layers,
                    "hidden layer sizes (default 64,128,192,256,192,128,64)")
      ->delimiter(',');
  train->add_option("--epochs", epochs,
                    "at most this many epochs (0: 400; early stopping ends "
                    "sooner)");
  uint64_t train_seed = 0;
  train->add_option("--seed", train_seed, "split, weights and batches (0: 1)")
      ->check(kWholeNumber);
  std::string train_dtype = "fp32", train_family;
  train->add_option("--dtype", train_dtype,
                    "precision: fp32, tf32, bf16 or fp16")
      ->capture_default_str();
  train->add_option("--family", train_family,
                    "train only this family's model (default: one model per "
                    "family with samples of the op and precision)");
  int members = 0;
  train->add_option("--members", members,
                    "an ensemble of this many networks, member i trained with "
                    "seed + i (0 or 1: one network; at most 16)")
      ->check(CLI::Range(0, 16));  // models/train.cc Validate
  int feature_set = 0;
  train->add_option("--features", feature_set,
                    "the input feature set: 1 log2 parameters and context, 2 "
                    "and the tiling's, 3 and the rows' alignment, 4 and the "
                    "waves' (0: each family's default)")
      ->check(CLI::Range(0, kNewestFeatureSet));
  double top_weight = 0;
  train->add_option("--top-weight", top_weight,
                    "the loss's weight on each context's fastest samples: a "
                    "sample t weighs 1 + W * (t_best / t)^10 (0: the plain "
                    "MSE)")
      ->check(CLI::Range(0.0, 100.0));

  auto* query = app.add_subcommand("query", "best kernel configurations for a context");
  query->require_subcommand(1);
  GemmFlags gemm_flags;
  ConvFlags conv_flags;
  QueryFlags query_flags;
  auto* q_gemm = query->add_subcommand("gemm", "C = op(A) * op(B)");
  AddGemmFlags(q_gemm, &gemm_flags);
  AddQueryFlags(q_gemm, &query_flags);
  auto* q_conv = query->add_subcommand("conv", "NHWC x KRSC convolution");
  AddConvFlags(q_conv, &conv_flags);
  AddQueryFlags(q_conv, &query_flags);

  auto* kernel = app.add_subcommand("kernel", "PTX and launch geometry");
  kernel->require_subcommand(1);
  KernelFlags kernel_flags;
  auto* k_gemm = kernel->add_subcommand("gemm", "a GEMM kernel");
  AddGemmFlags(k_gemm, &gemm_flags);
  auto* k_conv = kernel->add_subcommand("conv", "a convolution kernel");
  AddConvFlags(k_conv, &conv_flags);
  for (auto* k : {k_gemm, k_conv}) {
    k->add_option("--block-shape", kernel_flags.block_shape,
                  "\"ML=64 NL=64 MS=4 NS=4 U=8 KG=1\" (default: the best "
                  "answer for the context)");
    k->add_option("--device", kernel_flags.device,
                  "device name; with --family a built-in profile: h100, "
                  "h200, a100, v100 (default h100)");
    k->add_option("--arch", kernel_flags.arch,
                  "PTX target, e.g. sm_90 (default: the device's)");
    k->add_option("-o,--out", kernel_flags.out, "write the PTX to this file");
    k->add_option("--family", kernel_flags.family,
                  "generate here, without a daemon, from this kernel family "
                  "(see blocktune families); with --daemon: the daemon's "
                  "best answer of this family");
    k->add_option("--params", kernel_flags.params,
                  "with --family: its parameters, \"bm=128 bn=128 ...\" "
                  "(default: here, the family's default for the context; "
                  "with --daemon, its best answer)");
    k->add_flag("--daemon", kernel_flags.daemon,
                "with --family: ask blocktuned (its answer of that family, or "
                "with --params that configuration) instead of generating here");
  }
  k_gemm->add_option("--lda", kernel_flags.lda,
                     "with --family: leading dimension of A (0: tight)");
  k_gemm->add_option("--ldb", kernel_flags.ldb,
                     "with --family: leading dimension of B (0: tight)");
  k_gemm->add_option("--ldc", kernel_flags.ldc,
                     "with --family: leading dimension of C (0: tight)");

  auto* families = app.add_subcommand(
      "families",
      "the kernel families of this binary: op, precisions, version, "
      "parameters and their domains, rules (no daemon)");

  auto* export_cmd = app.add_subcommand(
      "export",
      "write tuned data to a file: a dataset (JSON, .gz compressed), or with "
      "--shapes/--all-tuned a self-contained C++ header");
  std::string out_path, export_op, export_device, format;
  bool with_samples = false, with_models = false;
  HeaderExportFlags header_flags;
  export_cmd->add_option("-o,--out", out_path, "file (default: stdout)");
  export_cmd->add_option("--op", export_op, "gemm or conv (default: both)");
  export_cmd->add_option("--device", export_device, "device name");
  export_cmd->add_flag("--samples", with_samples, "include every measurement");
  export_cmd->add_flag("--models", with_models, "include trained models");
  std::string export_dtype;
  bool include_stale = false;
  export_cmd->add_option("--dtype", export_dtype,
                         "only this precision: fp32, tf32, bf16 or fp16 "
                         "(default: every precision); a header takes a "
                         "comma list");
  export_cmd->add_flag("--include-stale", include_stale,
                       "also rows of older generator versions (they keep "
                       "their version; an importer keeps them stale)");
  export_cmd->add_option("--format", format,
                         "dataset or header (default: header with --shapes or "
                         "--all-tuned or an -o ending in .h/.hpp)");
  export_cmd->add_option("--shapes", header_flags.shapes,
                         "header: answer these contexts, one per line "
                         "(\"gemm m=4096 n=16 k=4096 layout=NT\")");
  export_cmd->add_flag("--all-tuned", header_flags.all_tuned,
                       "header: every stored answer");
  export_cmd->add_flag("--with-model", header_flags.with_model,
                       "header: embed the surrogate, to predict unseen shapes");

  auto* import_cmd = app.add_subcommand("import", "load a dataset file");
  std::string import_path;
  import_cmd->add_option("file", import_path, "a dataset written by export")
      ->required();

  auto* sample = app.add_subcommand(
      "sample",
      "draw (x_B, x_C) candidates with the rejection sampler, locally (no "
      "daemon), and report acceptance, rejections by rule, draws per second "
      "and the marginals of the accepted samples");
  SampleFlags sample_flags;
  sample->add_option("--op", sample_flags.op, "gemm or conv")
      ->capture_default_str();
  sample->add_option("--sampler", sample_flags.sampler, "uniform or bayes")
      ->capture_default_str();
  sample->add_option("--count", sample_flags.count, "accepted samples wanted")
      ->capture_default_str();
  sample->add_option("--device-profile", sample_flags.profile,
                     "h100, h200, a100, v100, or gpu (read GPU 0)")
      ->capture_default_str();
  sample->add_option("--seed", sample_flags.seed, "sampler seed")
      ->check(kWholeNumber)
      ->capture_default_str();
  sample->add_option("--domain", sample_flags.domain,
                     "a SamplingDomain text file (default: built in)");
  CLI::Option* rules_option =
      sample->add_option("--rules", sample_flags.rules,
                         "sampling-only rules to apply (hardware rules always "
                         "apply; by default less those the domain's "
                         "skip_rules name)")
          ->delimiter(',')
          ->capture_default_str();
  sample->add_option("--rho", sample_flags.rho, "occupancy rule: programs >= "
                     "rho * SMs")->capture_default_str();
  sample->add_option("--alpha", sample_flags.alpha,
                     "Naive Bayes prior count per value")->capture_default_str();
  sample->add_option("--warmup", sample_flags.warmup,
                     "Naive Bayes warm-up: uniform accepted samples")
      ->capture_default_str();
  sample->add_flag("--list", sample_flags.list, "print every accepted sample");

  AddSharedFlags(&app, &g);

  // A first word that is no command is said to be one (CLI11 said "A
  // subcommand is required").
  if (argc > 1 && argv[1][0] != '-') {
    bool known = false;
    std::string names;
    for (const CLI::App* sub : app.get_subcommands({})) {
      known = known || sub->get_name() == argv[1];
      names += (names.empty() ? "" : ", ") + sub->get_name();
    }
    if (!known) {
      return UsageError("unknown command '" + std::string(argv[1]) +
                        "'; the commands are " + names + " (blocktune --help)");
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? kExitOk : kExitUsage;
  }

  // Everything that can be checked here is, before any connection.
  // `kernel --family` generates here unless --daemon asks blocktuned (the
  // local form is what scripts without a daemon rely on, --server or not).
  const bool local_kernel = (*k_gemm || *k_conv) &&
                            !kernel_flags.family.empty() && !kernel_flags.daemon;
  if (local_kernel) {
    if (Status d = CheckLocalDType(
            "--dtype", *k_gemm ? gemm_flags.dtype : conv_flags.dtype);
        !d.ok())
      return UsageError(d.message());
    if (!kernel_flags.block_shape.empty())
      return UsageError("--block-shape is for a kernel from the daemon; with "
                        "--family give --params");
  } else if (*k_gemm || *k_conv) {
    if (kernel_flags.daemon && kernel_flags.family.empty())
      return UsageError("--daemon goes with --family (without --family the "
                        "kernel is the daemon's best answer already)");
    if (kernel_flags.lda || kernel_flags.ldb || kernel_flags.ldc)
      return UsageError("--lda, --ldb and --ldc are for a kernel generated "
                        "here (--family without --daemon)");
    if (!kernel_flags.params.empty() && kernel_flags.family.empty())
      return UsageError("--params need --family (a kernel from the daemon "
                        "takes --block-shape, or --family NAME --daemon "
                        "--params ...)");
    if (!kernel_flags.params.empty() && !kernel_flags.block_shape.empty())
      return UsageError("give --block-shape or --family with --params, not "
                        "both");
  }
  std::optional<Context> ctx;
  if (*q_gemm || *k_gemm || *q_conv || *k_conv) {
    auto parsed = (*q_gemm || *k_gemm) ? GemmFromFlags(gemm_flags)
                                       : ConvFromFlags(conv_flags);
    if (!parsed.ok()) return UsageError(parsed.status().message());
    ctx = *parsed;
  }
  if (*c_start) {
    auto op = OpFlag(campaign_op, true);
    auto dtype = DTypeFlag(campaign_dtype);
    if (!op.ok()) return UsageError(op.status().message());
    if (!dtype.ok()) return UsageError(dtype.status().message());
    spec.set_op(*op);
    spec.set_dtype(ToProto(*dtype));
    for (const std::string& f : campaign_families) spec.add_families(f);
    spec.set_retune_stale(retune_stale);
    spec.set_min_flops(min_flops);
    spec.set_max_flops(max_flops);
    for (int gpu : gpus) spec.add_gpus(gpu);
    spec.set_sampler(sampler);
    spec.set_minutes(minutes);
    spec.set_max_samples(max_samples);
    spec.set_seed(seed);
    spec.set_label(label);
    auto valid = FromProto(spec, "campaign");
    if (!valid.ok()) return UsageError(valid.status().message());
  }
  if (*sample) {
    sample_flags.rules_given = rules_option->count() > 0;
    return RunSample(sample_flags, g.json);
  }
  if (*families) return RunFamilies(g.json);
  if (local_kernel) {
    LocalKernelFlags local;
    local.family = kernel_flags.family;
    local.params = kernel_flags.params;
    local.device = kernel_flags.device;
    local.arch = kernel_flags.arch;
    local.out = kernel_flags.out;
    local.lda = kernel_flags.lda;
    local.ldb = kernel_flags.ldb;
    local.ldc = kernel_flags.ldc;
    return RunLocalKernel(*ctx, local, g.json);
  }
  v1::ExportRequest export_req;
  bool export_header = false;
  if (*export_cmd) {
    auto ends_with = [&](const char* suffix) {
      const std::string x = suffix;
      return out_path.size() >= x.size() &&
             out_path.compare(out_path.size() - x.size(), x.size(), x) == 0;
    };
    if (format.empty()) {
      export_header = !header_flags.shapes.empty() || header_flags.all_tuned ||
                      ends_with(".h") || ends_with(".hpp");
    } else if (format == "header") {
      export_header = true;
    } else if (format != "dataset") {
      return UsageError("--format must be dataset or header, got '" + format + "'");
    }
    if (export_header) {
      if (export_op.empty()) return UsageError("header export needs --op gemm or --op conv");
      if (with_samples || with_models) {
        return UsageError("--samples and --models are for dataset export; a "
                          "header takes --with-model");
      }
      if (include_stale) {
        return UsageError("--include-stale is for dataset export; a header "
                          "holds current answers only");
      }
      // A comma list of precisions for a header ("fp32,bf16"); its own
      // parser names --dtype and the allowed values.
      header_flags.dtype = export_dtype;
      header_flags.op = export_op;
      header_flags.device = export_device;
      header_flags.out = out_path;
      for (int i = 0; i < argc; ++i) {
        header_flags.command += (i ? " " : "") + std::string(i ? argv[i] : "blocktune");
      }
      if (header_flags.shapes.empty() == !header_flags.all_tuned) {
        return UsageError("header export needs exactly one of --shapes FILE and --all-tuned");
      }
    } else {
      if (!header_flags.shapes.empty() || header_flags.all_tuned || header_flags.with_model) {
        return UsageError("--shapes, --all-tuned and --with-model are for header export");
      }
      auto op = OpFlag(export_op, false);
      if (!op.ok()) return UsageError(op.status().message());
      export_req.set_op(*op);
      export_req.set_device_name(export_device);
      export_req.set_include_samples(with_samples);
      export_req.set_include_models(with_models);
      if (!export_dtype.empty()) {
        auto dtype = DTypeFlag(export_dtype);
        if (!dtype.ok()) return UsageError(dtype.status().message());
        export_req.set_dtype(ToProto(*dtype));
      }
      export_req.set_include_stale(include_stale);
      export_req.set_format(v1::EXPORT_FORMAT_DATASET);
    }
  }
  v1::TrainModelRequest train_req;
  if (*train) {
    auto op = OpFlag(train_op, true);
    if (!op.ok()) return UsageError(op.status().message());
    auto dtype = DTypeFlag(train_dtype);
    if (!dtype.ok()) return UsageError(dtype.status().message());
    train_req.set_op(*op);
    train_req.set_dtype(ToProto(*dtype));
    train_req.set_family(train_family);
    train_req.set_device_name(train_device);
    for (int l : layers) train_req.add_hidden_layers(l);
    train_req.set_epochs(epochs);
    train_req.set_seed(train_seed);
    train_req.set_members(members);
    train_req.set_feature_set(feature_set);
    train_req.set_top_weight(top_weight);
  }

  // A TCP port out of range is a usage error, not "cannot reach ... start
  // it with: blocktuned --listen 127.0.0.1:99999".
  if (const std::string& server = g.connection.server;
      server.rfind("unix", 0) != 0 && server.find(':') != std::string::npos &&
      server.back() != ']') {  // "[::1]": an IPv6 address without a port
    const std::string port = server.substr(server.rfind(':') + 1);
    const bool digits = !port.empty() && port.size() <= 5 &&
                        port.find_first_not_of("0123456789") == std::string::npos;
    if (!digits || std::stoi(port) < 1 || std::stoi(port) > 65535) {
      return UsageError("--server " + server + ": the port must be in [1, 65535], got '" +
                        port + "'");
    }
  }
  Connection conn(g.connection);
  // Unreachable: 3. A token file or CA that cannot be read: nothing was
  // sent, a usage error (2).
  if (Status connected = conn.Connect(); !connected.ok()) {
    return connected.code() == StatusCode::kUnavailable ? StatusFailed(connected)
                                                         : UsageError(connected.message());
  }

  if (*health) {
    v1::HealthResponse resp;
    grpc::Status s = conn.stub().Health(conn.NewContext().get(), {}, &resp);
    return s.ok() ? Emit(g, resp) : CallFailed(s);
  }
  if (*devices) {
    v1::ListDevicesResponse resp;
    grpc::Status s = conn.stub().ListDevices(conn.NewContext().get(), {}, &resp);
    return s.ok() ? Emit(g, resp) : CallFailed(s);
  }
  if (*c_start) {
    v1::StartCampaignRequest req;
    *req.mutable_spec() = spec;
    v1::StartCampaignResponse resp;
    grpc::Status s =
        conn.stub().StartCampaign(conn.NewContext().get(), req, &resp);
    if (!s.ok()) return CallFailed(s);
    if (!watch_after_start) return Emit(g, resp.campaign());
    campaign_id = resp.campaign().id();
  }
  if (*c_watch || (*c_start && watch_after_start)) {
    v1::WatchCampaignRequest req;
    req.set_id(campaign_id);
    auto context = conn.NewContext(/*stream=*/true);
    auto reader = conn.stub().WatchCampaign(context.get(), req);
    return WatchProgress(g, reader.get());
  }
  if (*c_list) {
    v1::ListCampaignsResponse resp;
    grpc::Status s =
        conn.stub().ListCampaigns(conn.NewContext().get(), {}, &resp);
    if (!s.ok()) return CallFailed(s);
    if (g.json) std::cout << ToJson(resp);
    else if (resp.campaigns().empty()) std::cout << "no campaigns yet\n";
    for (const auto& c : resp.campaigns())
      if (!g.json) Print(c, std::cout);
    return kExitOk;
  }
  if (*c_cancel) {
    v1::CancelCampaignRequest req;
    req.set_id(campaign_id);
    v1::CancelCampaignResponse resp;
    grpc::Status s =
        conn.stub().CancelCampaign(conn.NewContext().get(), req, &resp);
    return s.ok() ? Emit(g, resp.campaign()) : CallFailed(s);
  }
  if (*train) {
    // --timeout may come before or after `train`.
    const bool bounded = app.get_option("--timeout")->count() > 0 ||
                         train->get_option("--timeout")->count() > 0;
    return RunTrain(
        conn, g, train_req,
        bounded ? std::optional<int>(g.connection.timeout_s) : std::nullopt);
  }
  if (*q_gemm || *q_conv) return RunQuery(conn, g, *ctx, query_flags);
  if (*k_gemm || *k_conv)
    return RunKernel(conn, g, *ctx, kernel_flags);
  if (*export_cmd && export_header) return RunHeaderExport(conn, header_flags);
  if (*export_cmd) return RunExport(conn, g, out_path, export_req);
  if (*import_cmd) return RunImport(conn, g, import_path);
  return UsageError("no command given; see blocktune --help");
}

}  // namespace blocktune
