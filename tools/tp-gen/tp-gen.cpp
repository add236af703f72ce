//===- tp-gen.cpp - generate Transformer graphs -----------------*- C++ -*-===//
//
// Writes a GPT-2 or Llama forward function, or one training step (--train),
// in upstream MLIR (func, linalg, tensor, arith, math) for tp-opt to plan and
// partition. A preset gives the
// published shapes; the size flags override them. docs/models.md describes
// the IR and the parameter initialisation contract.
//
//===----------------------------------------------------------------------===//

#include "tp/Dialect/TP/IR/TPDialect.h"
#include "tp/Models/ModelConfig.h"
#include "tp/Models/Models.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>

using namespace mlir;
using namespace mlir::tp::models;
namespace cl = llvm::cl;

static cl::OptionCategory genCategory("tp-gen options");

static cl::opt<std::string>
    modelName("model",
              cl::desc("Architecture: gpt2 or llama (default: the "
                       "preset's, else gpt2)"),
              cl::value_desc("name"), cl::cat(genCategory));
static cl::opt<std::string> presetName(
    "preset",
    cl::desc("Published shapes to start from: tiny (the tiny preset of "
             "--model), gpt2-tiny, gpt2-small, gpt2-medium, gpt2-xl, "
             "llama-tiny, llama2-7b, llama3-8b, llama2-70b (default: "
             "gpt2-small, or llama2-7b with --model llama)"),
    cl::value_desc("name"), cl::cat(genCategory));

static cl::opt<int64_t> layers("layers", cl::desc("Number of decoder blocks"),
                               cl::value_desc("n"), cl::cat(genCategory));
static cl::opt<int64_t> hidden("hidden", cl::desc("Hidden size"),
                               cl::value_desc("n"), cl::cat(genCategory));
static cl::opt<int64_t> heads("heads", cl::desc("Attention (query) heads"),
                              cl::value_desc("n"), cl::cat(genCategory));
static cl::opt<int64_t>
    kvHeads("kv-heads",
            cl::desc("Key/value heads (llama; follows --heads when the preset "
                     "has as many as query heads)"),
            cl::value_desc("n"), cl::cat(genCategory));
static cl::opt<int64_t> ffn("ffn", cl::desc("Inner size of the MLP"),
                            cl::value_desc("n"), cl::cat(genCategory));
static cl::opt<int64_t> vocab("vocab", cl::desc("Vocabulary size"),
                              cl::value_desc("n"), cl::cat(genCategory));
static cl::opt<int64_t> seq("seq", cl::desc("Tokens per sequence"),
                            cl::value_desc("n"), cl::cat(genCategory));
static cl::opt<int64_t> batch("batch", cl::desc("Sequences per batch"),
                              cl::value_desc("n"), cl::cat(genCategory));
static cl::opt<int64_t>
    maxPositions("max-positions",
                 cl::desc("Rows of GPT-2's learned position table"),
                 cl::value_desc("n"), cl::cat(genCategory));
static cl::opt<std::string>
    dtypeName("dtype", cl::desc("Element type: f32, f16 or bf16"),
              cl::value_desc("type"), cl::init("f32"), cl::cat(genCategory));
static cl::opt<bool> withEmbedding(
    "with-embedding",
    cl::desc("Start from token ids: add the token (and position) embedding"),
    cl::cat(genCategory));
static cl::opt<bool>
    withLoss("with-loss",
             cl::desc("Take labels and return the mean cross-entropy"),
             cl::cat(genCategory));
static cl::opt<bool> blocksOnly(
    "blocks-only",
    cl::desc("Emit only the decoder blocks (no final norm, no LM head)"),
    cl::cat(genCategory));
static cl::opt<bool> train(
    "train",
    cl::desc("Emit one training step, @train_step: forward, mean "
             "cross-entropy, backward and AdamW (implies --with-embedding "
             "and --with-loss)"),
    cl::cat(genCategory));
static cl::opt<std::string>
    emit("emit",
         cl::desc("With --train: 'step' (@train_step, the default) or "
                  "'grads' (@train_grads: the loss and the gradients, no "
                  "optimizer)"),
         cl::value_desc("what"), cl::init("step"), cl::cat(genCategory));
static cl::opt<double> lr("lr", cl::desc("AdamW learning rate (--train)"),
                          cl::value_desc("x"), cl::init(1e-3),
                          cl::cat(genCategory));
static cl::opt<double> beta1("beta1",
                             cl::desc("AdamW first-moment decay (--train)"),
                             cl::value_desc("x"), cl::init(0.9),
                             cl::cat(genCategory));
static cl::opt<double> beta2("beta2",
                             cl::desc("AdamW second-moment decay (--train)"),
                             cl::value_desc("x"), cl::init(0.999),
                             cl::cat(genCategory));
static cl::opt<double> adamEps("eps",
                               cl::desc("AdamW epsilon (--train)"),
                               cl::value_desc("x"), cl::init(1e-8),
                               cl::cat(genCategory));
static cl::opt<double> weightDecay(
    "weight-decay",
    cl::desc("AdamW decoupled weight decay of weight matrices and embeddings "
             "(--train)"),
    cl::value_desc("x"), cl::init(0.01), cl::cat(genCategory));
static cl::opt<bool> hfLayout(
    "hf",
    cl::desc("Hugging Face transformers layout: the parameters get the names "
             "and shapes of GPT2LMHeadModel's / LlamaForCausalLM's state dict "
             "as tp.name (GPT-2's c_attn [H, 3H], Llama's weights [out, in]), "
             "input_ids in, logits [B, S, V] out; implies --with-embedding; "
             "forward graphs only (not with --train)"),
    cl::cat(genCategory));
static cl::opt<std::string> hfConfig(
    "hf-config",
    cl::desc("Read the sizes, norm epsilon, rotary base and tying of a Hugging "
             "Face config.json (or of the config.json in a folder); implies "
             "--hf. Without --preset, the seq and batch are the tiny "
             "preset's; size flags still override"),
    cl::value_desc("file"), cl::cat(genCategory));
static cl::opt<double>
    normEpsOption("norm-eps",
                  cl::desc("Epsilon of LayerNorm / RMSNorm (default: 1e-5, "
                           "or --hf-config's)"),
                  cl::value_desc("x"), cl::cat(genCategory));
static cl::opt<double> ropeThetaOption(
    "rope-theta",
    cl::desc("Base of the rotary frequencies (llama; default: the preset's, or "
             "--hf-config's)"),
    cl::value_desc("x"), cl::cat(genCategory));
static cl::opt<bool> tieEmbeddings(
    "tie-embeddings",
    cl::desc("With --hf and llama: the LM head is model.embed_tokens.weight "
             "(tie_word_embeddings; --hf-config sets it)"),
    cl::cat(genCategory));
static cl::opt<bool> printParamCount(
    "print-param-count",
    cl::desc("Print the parameter count and sizes, summed from the argument "
             "types of the generated function, to stderr"),
    cl::cat(genCategory));
static cl::opt<std::string> outputFile("o", cl::desc("Output file"),
                                       cl::value_desc("file"), cl::init("-"),
                                       cl::cat(genCategory));

/// Prints `tp-gen: error: <message>` and returns the exit code 1.
static int fail(const llvm::Twine &message) {
  llvm::WithColor::error(llvm::errs(), "tp-gen") << message << "\n";
  return 1;
}

/// Resolves --model, --preset and the size flags into a configuration.
static std::optional<ModelConfig> resolveConfig(std::string &error) {
  llvm::raw_string_ostream os(error);
  std::optional<Arch> arch;
  if (modelName.getNumOccurrences()) {
    arch = parseArch(modelName);
    if (!arch) {
      os << "unknown model '" << modelName << "'; expected 'gpt2' or 'llama'";
      return std::nullopt;
    }
  }
  // --hf-config: the architecture is the file's model_type.
  std::string hfJson, hfPath = hfConfig;
  std::optional<Arch> hfArch;
  if (hfConfig.getNumOccurrences()) {
    if (llvm::sys::fs::is_directory(hfPath))
      hfPath += "/config.json";
    auto buffer = llvm::MemoryBuffer::getFile(hfPath);
    if (!buffer) {
      os << "cannot read --hf-config '" << hfPath
         << "': " << buffer.getError().message();
      return std::nullopt;
    }
    hfJson = (*buffer)->getBuffer().str();
    std::string problem;
    hfArch = getHFConfigArch(hfJson, problem);
    if (!hfArch) {
      os << "--hf-config '" << hfPath << "': " << problem;
      return std::nullopt;
    }
    if (arch && *arch != *hfArch) {
      os << "--hf-config '" << hfPath << "' is a " << stringifyArch(*hfArch)
         << " model, not " << stringifyArch(*arch);
      return std::nullopt;
    }
    arch = hfArch;
  }

  std::string name = presetName;
  if (!presetName.getNumOccurrences())
    name = hfArch ? getTinyPresetName(*hfArch).str()
                  : getDefaultPresetName(arch.value_or(Arch::GPT2)).str();
  else if (name == "tiny")
    name = getTinyPresetName(arch.value_or(Arch::GPT2)).str();
  std::optional<ModelConfig> config = lookupPreset(name);
  if (!config) {
    os << "unknown preset '" << name << "'; expected tiny, "
       << llvm::join(getPresetNames(), ", ");
    return std::nullopt;
  }
  if (arch && *arch != config->arch) {
    os << "preset '" << name << "' is a " << stringifyArch(config->arch)
       << " model, not " << stringifyArch(*arch);
    if (hfArch && !modelName.getNumOccurrences())
      os << " (the model_type of --hf-config '" << hfPath << "')";
    return std::nullopt;
  }
  if (hfArch) {
    if (std::optional<std::string> problem = applyHFConfig(hfJson, *config)) {
      os << "--hf-config '" << hfPath << "': " << *problem;
      return std::nullopt;
    }
  }

  bool multiHead = config->kvHeads == config->heads;
  auto override = [](cl::opt<int64_t> &option, int64_t &field) {
    if (option.getNumOccurrences())
      field = option;
  };
  override(layers, config->layers);
  override(hidden, config->hidden);
  override(heads, config->heads);
  if (multiHead)
    config->kvHeads = config->heads;
  override(kvHeads, config->kvHeads);
  override(ffn, config->ffn);
  override(vocab, config->vocab);
  override(seq, config->seq);
  override(batch, config->batch);
  override(maxPositions, config->maxPositions);
  if (normEpsOption.getNumOccurrences())
    config->normEps = normEpsOption;
  if (ropeThetaOption.getNumOccurrences())
    config->ropeTheta = ropeThetaOption;
  if (tieEmbeddings)
    config->tieEmbeddings = true;
  config->hf = hfLayout || hfConfig.getNumOccurrences();
  if (config->hf && train) {
    os << "--hf emits forward graphs only and cannot be combined with --train "
          "(training steps keep tp-gen's layout)";
    return std::nullopt;
  }
  if (config->hf && blocksOnly) {
    os << "--hf and --blocks-only exclude each other (the Hugging Face layout "
          "is the whole model, from input_ids to logits)";
    return std::nullopt;
  }

  std::optional<DType> dtype = parseDType(dtypeName);
  if (!dtype) {
    os << "unknown dtype '" << dtypeName << "'; expected f32, f16 or bf16";
    return std::nullopt;
  }
  config->dtype = *dtype;
  if (withEmbedding && blocksOnly) {
    os << "--with-embedding and --blocks-only exclude each other";
    return std::nullopt;
  }
  if (train && blocksOnly) {
    os << "--train and --blocks-only exclude each other";
    return std::nullopt;
  }
  config->scope = withEmbedding || train || config->hf ? Scope::WithEmbedding
                  : blocksOnly           ? Scope::BlocksOnly
                                         : Scope::Default;
  config->withLoss = withLoss || train;
  if (std::optional<std::string> problem = verifyConfig(*config)) {
    os << *problem;
    return std::nullopt;
  }
  return config;
}

/// Resolves --emit and the optimizer flags; they need --train.
static std::optional<TrainOptions> resolveTrainOptions(std::string &error) {
  llvm::raw_string_ostream os(error);
  TrainOptions options;
  if (!train) {
    for (cl::Option *option :
         std::initializer_list<cl::Option *>{&emit, &lr, &beta1, &beta2,
                                             &adamEps, &weightDecay})
      if (option->getNumOccurrences()) {
        os << "--" << option->ArgStr << " needs --train";
        return std::nullopt;
      }
    return options;
  }
  if (emit != "step" && emit != "grads") {
    os << "unknown --emit '" << emit << "'; expected 'step' or 'grads'";
    return std::nullopt;
  }
  options.gradsOnly = emit == "grads";
  auto check = [&](bool ok, llvm::StringRef flag, double value,
                   llvm::StringRef range) {
    if (!ok)
      os << "--" << flag << " is " << llvm::format("%g", value)
         << "; expected " << range;
    return ok;
  };
  if (!check(lr > 0 && std::isfinite(lr), "lr", lr, "a positive number") ||
      !check(beta1 >= 0 && beta1 < 1, "beta1", beta1, "0 <= beta1 < 1") ||
      !check(beta2 >= 0 && beta2 < 1, "beta2", beta2, "0 <= beta2 < 1") ||
      !check(adamEps > 0 && std::isfinite(adamEps), "eps", adamEps,
             "a positive number") ||
      !check(weightDecay >= 0 && std::isfinite(weightDecay), "weight-decay",
             weightDecay, "a number >= 0"))
    return std::nullopt;
  options.lr = lr;
  options.beta1 = beta1;
  options.beta2 = beta2;
  options.eps = adamEps;
  options.weightDecay = weightDecay;
  return options;
}

/// The first line of the output: a comment holding the tp-gen command that
/// regenerates this exact output, and the constants no flag sets.
static std::string describe(const ModelConfig &config,
                            const TrainOptions *trainOptions) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "// tp-gen --model " << stringifyArch(config.arch) << " --preset "
     << config.preset << " --layers " << config.layers << " --hidden "
     << config.hidden << " --heads " << config.heads << " --kv-heads "
     << config.kvHeads << " --ffn " << config.ffn << " --vocab " << config.vocab
     << " --seq " << config.seq << " --batch " << config.batch;
  if (config.arch == Arch::GPT2)
    os << " --max-positions " << config.maxPositions;
  os << " --dtype " << stringifyDType(config.dtype);
  // The constants are flags of the command under --hf or when given.
  bool constantsInCommand = config.hf || normEpsOption.getNumOccurrences() ||
                            ropeThetaOption.getNumOccurrences();
  if (config.hf)
    os << " --hf";
  if (constantsInCommand) {
    os << " --norm-eps " << llvm::format("%g", config.normEps);
    if (config.arch == Arch::Llama)
      os << " --rope-theta " << llvm::format("%g", config.ropeTheta);
  }
  if (config.tieEmbeddings)
    os << " --tie-embeddings";
  if (config.scope == Scope::WithEmbedding)
    os << " --with-embedding";
  if (config.scope == Scope::BlocksOnly)
    os << " --blocks-only";
  if (config.withLoss)
    os << " --with-loss";
  if (trainOptions) {
    os << " --train";
    if (trainOptions->gradsOnly)
      os << " --emit grads";
    else
      os << " --lr " << llvm::format("%g", trainOptions->lr) << " --beta1 "
         << llvm::format("%g", trainOptions->beta1) << " --beta2 "
         << llvm::format("%g", trainOptions->beta2) << " --eps "
         << llvm::format("%g", trainOptions->eps) << " --weight-decay "
         << llvm::format("%g", trainOptions->weightDecay);
  }
  os << "  (";
  if (!constantsInCommand) {
    if (config.arch == Arch::Llama)
      os << "rope-theta " << llvm::format("%g", config.ropeTheta) << ", ";
    os << "norm-eps " << llvm::format("%g", config.normEps) << ", ";
  }
  os << "init-std " << llvm::format("%g", config.initStd) << ")\n";
  return text;
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  // --mlir-print-debuginfo shows the names of arguments and ops.
  registerAsmPrinterCLOptions();
  if (cl::Option *debugInfo =
          cl::getRegisteredOptions().lookup("mlir-print-debuginfo"))
    debugInfo->addCategory(genCategory);
  cl::HideUnrelatedOptions(genCategory);
  cl::ParseCommandLineOptions(
      argc, argv,
      "tp-gen: GPT-2 and Llama forward functions in upstream MLIR\n\n"
      "  The size flags override the preset's shapes. Output: func.func\n"
      "  @forward (with --train: @train_step, forward, backward and AdamW)\n"
      "  in func/linalg/tensor/arith/math; docs/models.md describes the IR,\n"
      "  the training step and the tp.init contract.\n");

  std::string error;
  std::optional<ModelConfig> config = resolveConfig(error);
  if (!config)
    return fail(error);
  std::optional<TrainOptions> trainOptions = resolveTrainOptions(error);
  if (!trainOptions)
    return fail(error);

  DialectRegistry registry;
  registerModelDialects(registry);
  // The tp dialect verifies the tp.param and tp.init argument attributes.
  registry.insert<tp::TPDialect>();
  MLIRContext context(registry);
  context.loadAllAvailableDialects();

  OwningOpRef<ModuleOp> module =
      train ? buildTrainStep(&context, *config, *trainOptions)
            : buildModel(&context, *config);
  if (failed(verify(*module)))
    return fail("internal error: the generated IR does not verify");

  std::string openError;
  std::unique_ptr<llvm::ToolOutputFile> output =
      openOutputFile(outputFile, &openError);
  if (!output)
    return fail(openError);
  output->os() << describe(*config, train ? &*trainOptions : nullptr);
  module->print(output->os());
  output->os() << "\n";
  output->keep();

  if (printParamCount) {
    auto fn = *module->getOps<func::FuncOp>().begin();
    ParamStats stats = computeParamStats(fn);
    llvm::raw_ostream &os = llvm::errs();
    os << "stats: parameters " << stats.elements << "\n"
       << "stats: parameter-tensors " << stats.tensors << "\n"
       << "stats: parameter-bytes " << stats.bytes << "\n"
       << "stats: random-init-tensors " << stats.randomInits << "\n"
       << "stats: distinct-seeds " << stats.distinctSeeds << "\n"
       << "stats: ops " << fn.getBody().front().getOperations().size() << "\n";
  }
  return 0;
}
