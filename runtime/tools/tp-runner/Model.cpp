//===- Model.cpp - model.json of a compiled model -------------------------===//

#include "Model.h"

#include "Checkpoint.h"
#include "Train.h"

#include "Json.h"


using namespace tprun;

size_t tprun::dtypeSize(DType dtype) {
  switch (dtype) {
  case DType::F32:
  case DType::I32:
    return 4;
  case DType::F16:
  case DType::BF16:
    return 2;
  case DType::F64:
  case DType::I64:
    return 8;
  case DType::I8:
  case DType::I1:
    return 1;
  }
  return 0;
}

const char *tprun::dtypeName(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return "f32";
  case DType::F16:
    return "f16";
  case DType::BF16:
    return "bf16";
  case DType::F64:
    return "f64";
  case DType::I64:
    return "i64";
  case DType::I32:
    return "i32";
  case DType::I8:
    return "i8";
  case DType::I1:
    return "i1";
  }
  return "?";
}

const char *const tprun::kCollectiveNames[TPRT_NUM_COLLECTIVES] = {
    "all_reduce", "all_gather", "reduce_scatter", "all_to_all"};

tprt_dtype tprun::commDType(DType dtype) {
  uint32_t code = dtypeCode(dtype);
  return code <= TPRT_I64 ? tprt_dtype(code) : TPRT_I32;
}

uint32_t tprun::dtypeCode(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return TPRT_F32;
  case DType::F16:
    return TPRT_F16;
  case DType::BF16:
    return TPRT_BF16;
  case DType::F64:
    return TPRT_F64;
  case DType::I32:
    return TPRT_I32;
  case DType::I64:
    return TPRT_I64;
  case DType::I8:
    return 6;
  case DType::I1:
    return 7;
  }
  return 0xffffffffu;
}

bool tprun::isFloat(DType dtype) {
  return dtype == DType::F32 || dtype == DType::F16 || dtype == DType::BF16 ||
         dtype == DType::F64;
}

const char *tprun::roleName(Role role) {
  switch (role) {
  case Role::Input:
    return "input";
  case Role::Param:
    return "param";
  case Role::Output:
    return "output";
  }
  return "?";
}

int64_t Buffer::localElements() const {
  int64_t n = 1;
  for (int64_t d : localShape)
    n *= d;
  return n;
}

int64_t Buffer::globalElements() const {
  int64_t n = 1;
  for (int64_t d : globalShape)
    n *= d;
  return n;
}

int64_t Model::devices() const {
  int64_t n = 1;
  for (int64_t s : axisSizes)
    n *= s;
  return n;
}

int64_t Model::groupSize(const std::vector<int> &axes) const {
  int64_t n = 1;
  for (int a : axes)
    n *= axisSizes[size_t(a)];
  return n;
}

std::string Model::meshText() const {
  if (axisNames.empty())
    return "(no axes)";
  std::string text;
  for (size_t i = 0; i < axisNames.size(); ++i) {
    if (i)
      text += " x ";
    text += axisNames[i] + "=" + std::to_string(axisSizes[i]);
  }
  return text;
}

namespace {

[[noreturn]] void error(const std::string &message) {
  throw ModelError(message);
}

const JsonValue &member(const JsonValue &object, const std::string &path,
                        const std::string &key) {
  const JsonValue *value = object.get(key);
  if (!value)
    error("missing field \"" + path + key + "\"");
  return *value;
}

void expectKind(const JsonValue &value, JsonValue::Kind kind,
                const std::string &field, const std::string &what) {
  if (value.kind != kind)
    error("field \"" + field + "\" is " + value.kindName() + ", expected " +
          what);
}

const std::string &getString(const JsonValue &object, const std::string &path,
                             const std::string &key) {
  const JsonValue &value = member(object, path, key);
  expectKind(value, JsonValue::Kind::String, path + key, "a string");
  return value.text;
}

int64_t toInt(const JsonValue &value, const std::string &field,
              int64_t minimum) {
  int64_t result;
  if (!value.asInt64(result))
    error("field \"" + field + "\" is " +
          (value.isNumber() ? "\"" + value.text + "\"" : value.kindName()) +
          ", expected an integer");
  if (result < minimum)
    error("field \"" + field + "\" is " + std::to_string(result) +
          ", expected at least " + std::to_string(minimum));
  return result;
}

int64_t getInt(const JsonValue &object, const std::string &path,
               const std::string &key, int64_t minimum) {
  return toInt(member(object, path, key), path + key, minimum);
}

double getDouble(const JsonValue &object, const std::string &path,
                 const std::string &key) {
  const JsonValue &value = member(object, path, key);
  double result;
  if (!value.asDouble(result))
    error("field \"" + path + key + "\" is " + value.kindName() +
          ", expected a number");
  return result;
}

DType parseDType(const std::string &text, const std::string &field) {
  static const std::pair<const char *, DType> names[] = {
      {"f32", DType::F32}, {"f16", DType::F16}, {"bf16", DType::BF16},
      {"f64", DType::F64}, {"i64", DType::I64}, {"i32", DType::I32},
      {"i8", DType::I8},   {"i1", DType::I1}};
  for (const auto &entry : names)
    if (text == entry.first)
      return entry.second;
  error("field \"" + field + "\" is \"" + text +
        "\", expected f32, f16, bf16, f64, i64, i32, i8 or i1");
}

std::vector<int64_t> getShape(const JsonValue &object, const std::string &path,
                              const std::string &key) {
  const JsonValue &value = member(object, path, key);
  expectKind(value, JsonValue::Kind::Array, path + key,
             "an array of dimension sizes");
  if (value.items.size() > TPRT_MAX_RANK)
    error("field \"" + path + key + "\" has rank " +
          std::to_string(value.items.size()) + ", at most " +
          std::to_string(TPRT_MAX_RANK) + " is supported");
  std::vector<int64_t> shape;
  int64_t elements = 1;
  for (size_t d = 0; d < value.items.size(); ++d) {
    std::string field = path + key + "[" + std::to_string(d) + "]";
    shape.push_back(toInt(value.items[d], field, 0));
    if (shape.back() > 0 &&
        __builtin_mul_overflow(elements, shape.back(), &elements))
      error("field \"" + path + key + "\" has too many elements");
  }
  // Keep element counts (and byte counts) well inside int64_t.
  if (elements > (int64_t(1) << 56))
    error("field \"" + path + key + "\" has too many elements");
  return shape;
}

int axisIndex(const Model &model, const JsonValue &value,
              const std::string &field) {
  expectKind(value, JsonValue::Kind::String, field, "a mesh axis name");
  for (size_t i = 0; i < model.axisNames.size(); ++i)
    if (model.axisNames[i] == value.text)
      return int(i);
  std::string known;
  for (const auto &name : model.axisNames)
    known += (known.empty() ? "" : ", ") + name;
  error("field \"" + field + "\" is \"" + value.text +
        "\", which is not a mesh axis (axes: " +
        (known.empty() ? "none" : known) + ")");
}

std::vector<int> getAxes(const Model &model, const JsonValue &value,
                         const std::string &field) {
  expectKind(value, JsonValue::Kind::Array, field,
             "an array of mesh axis names");
  std::vector<int> axes;
  for (size_t i = 0; i < value.items.size(); ++i) {
    std::string itemField = field + "[" + std::to_string(i) + "]";
    int axis = axisIndex(model, value.items[i], itemField);
    for (int seen : axes)
      if (seen == axis)
        error("field \"" + itemField + "\" repeats the axis \"" +
              model.axisNames[size_t(axis)] + "\"");
    axes.push_back(axis);
  }
  return axes;
}

Init parseInit(const JsonValue &value, const std::string &path) {
  Init init;
  const std::string &kind = getString(value, path, "kind");
  if (kind == "normal") {
    init.kind = Init::Kind::Normal;
    init.std = getDouble(value, path, "std");
  } else if (kind == "uniform") {
    init.kind = Init::Kind::Uniform;
    init.scale = getDouble(value, path, "scale");
  } else if (kind == "zeros") {
    init.kind = Init::Kind::Zeros;
  } else if (kind == "ones") {
    init.kind = Init::Kind::Ones;
  } else if (kind == "integers") {
    init.kind = Init::Kind::Integers;
    init.high = uint64_t(getInt(value, path, "high", 1));
  } else {
    error("field \"" + path + "kind\" is \"" + kind +
          "\", expected normal, uniform, zeros, ones or integers");
  }
  if (init.kind == Init::Kind::Normal || init.kind == Init::Kind::Uniform ||
      init.kind == Init::Kind::Integers) {
    // Seeds are non-negative i64 (docs/models.md); accept any 64-bit
    // integer literal, used modulo 2^64.
    const JsonValue &seed = member(value, path, "seed");
    int64_t signedSeed;
    if (seed.asUInt64(init.seed)) {
    } else if (seed.asInt64(signedSeed)) {
      init.seed = uint64_t(signedSeed);
    } else {
      error("field \"" + path + "seed\" is " +
            (seed.isNumber() ? "\"" + seed.text + "\"" : seed.kindName()) +
            ", expected a 64-bit integer");
    }
  }
  return init;
}

Buffer parseBuffer(const Model &model, const JsonValue &value,
                   const std::string &path) {
  expectKind(value, JsonValue::Kind::Object, path.substr(0, path.size() - 1),
             "an object");
  Buffer buffer;
  const std::string &role = getString(value, path, "role");
  if (role == "input")
    buffer.role = Role::Input;
  else if (role == "param")
    buffer.role = Role::Param;
  else if (role == "output")
    buffer.role = Role::Output;
  else
    error("field \"" + path + "role\" is \"" + role +
          "\", expected input, param or output");
  buffer.index = getInt(value, path, "index", 0);
  buffer.name = getString(value, path, "name");
  buffer.dtype = parseDType(getString(value, path, "dtype"), path + "dtype");
  buffer.globalShape = getShape(value, path, "global_shape");
  buffer.localShape = getShape(value, path, "local_shape");
  size_t rank = buffer.globalShape.size();
  if (buffer.localShape.size() != rank)
    error("field \"" + path + "local_shape\" has rank " +
          std::to_string(buffer.localShape.size()) + " but \"" + path +
          "global_shape\" has rank " + std::to_string(rank));

  // Layout.
  const JsonValue &layout = member(value, path, "layout");
  expectKind(layout, JsonValue::Kind::Object, path + "layout", "an object");
  std::string layoutPath = path + "layout.";
  const JsonValue &dims = member(layout, layoutPath, "dims");
  expectKind(dims, JsonValue::Kind::Array, layoutPath + "dims",
             "an array with one list of mesh axes per dimension");
  if (dims.items.size() != rank)
    error("field \"" + layoutPath + "dims\" has " +
          std::to_string(dims.items.size()) + " entries but the buffer has rank " +
          std::to_string(rank));
  std::vector<bool> used(model.axisNames.size(), false);
  for (size_t d = 0; d < rank; ++d) {
    std::string field = layoutPath + "dims[" + std::to_string(d) + "]";
    std::vector<int> axes = getAxes(model, dims.items[d], field);
    for (int axis : axes) {
      if (used[size_t(axis)])
        error("field \"" + field + "\" uses the axis \"" +
              model.axisNames[size_t(axis)] +
              "\", which already splits another dimension");
      used[size_t(axis)] = true;
    }
    int64_t group = model.groupSize(axes);
    int64_t n = buffer.globalShape[d];
    int64_t expected = (n + group - 1) / group;
    if (buffer.localShape[d] != expected) {
      std::string split =
          axes.empty() ? std::string("whole (not split)")
                       : "split over " + std::to_string(group) + " devices";
      error("field \"" + path + "local_shape[" + std::to_string(d) +
            "]\" is " + std::to_string(buffer.localShape[d]) +
            " but global_shape[" + std::to_string(d) + "] = " +
            std::to_string(n) + " " + split + " needs " +
            std::to_string(expected));
    }
    buffer.dimAxes.push_back(axes);
  }
  const JsonValue &partial = member(layout, layoutPath, "partial");
  if (!partial.isNull()) {
    std::string partialPath = layoutPath + "partial.";
    expectKind(partial, JsonValue::Kind::Object, layoutPath + "partial",
               "null or an object");
    if (buffer.role != Role::Output)
      error("field \"" + layoutPath + "partial\" is set on the " + role +
            "; partial layouts are for outputs only");
    const std::string &kind = getString(partial, partialPath, "kind");
    if (kind == "sum")
      buffer.partialKind = TPRT_SUM;
    else if (kind == "max")
      buffer.partialKind = TPRT_MAX;
    else if (kind == "min")
      buffer.partialKind = TPRT_MIN;
    else
      error("field \"" + partialPath + "kind\" is \"" + kind +
            "\", expected sum, max or min");
    buffer.partial = true;
    buffer.partialAxes =
        getAxes(model, member(partial, partialPath, "axes"), partialPath + "axes");
    for (int axis : buffer.partialAxes)
      if (used[size_t(axis)])
        error("field \"" + partialPath + "axes\" names the axis \"" +
              model.axisNames[size_t(axis)] +
              "\", which also splits a dimension");
  }

  // Init.
  const JsonValue *init = value.get("init");
  if (buffer.role == Role::Output) {
    if (init && !init->isNull())
      error("field \"" + path + "init\" is set on an output, expected null");
  } else {
    if (!init)
      error("missing field \"" + path + "init\"");
    // null: no generator; the value comes from a file (Sources.h).
    if (!init->isNull()) {
      expectKind(*init, JsonValue::Kind::Object, path + "init",
                 std::string("an object (how to initialise the ") + role +
                     ") or null");
      buffer.init = parseInit(*init, path + "init.");
      buffer.hasInit = true;
    }
  }
  // Where the buffer lies in the tensor a checkpoint stores.
  buffer.sourceOffsets.assign(rank, 0);
  buffer.sourceShape = buffer.globalShape;
  const JsonValue *source = value.get("source");
  if (source && !source->isNull()) {
    if (buffer.role == Role::Output)
      error("field \"" + path +
            "source\" is set on an output; only inputs and params are "
            "blocks of a stored tensor");
    expectKind(*source, JsonValue::Kind::Object, path + "source",
               "an object ({\"offsets\": [...], \"shape\": [...]}) or null");
    std::string sourcePath = path + "source.";
    std::vector<int64_t> shape = getShape(*source, sourcePath, "shape");
    if (shape.size() != rank)
      error("field \"" + sourcePath + "shape\" has rank " +
            std::to_string(shape.size()) + " but \"" + path +
            "global_shape\" has rank " + std::to_string(rank));
    const JsonValue &offsets = member(*source, sourcePath, "offsets");
    expectKind(offsets, JsonValue::Kind::Array, sourcePath + "offsets",
               "an array of offsets, one per dimension");
    if (offsets.items.size() != rank)
      error("field \"" + sourcePath + "offsets\" has " +
            std::to_string(offsets.items.size()) +
            " entries but the buffer has rank " + std::to_string(rank));
    for (size_t d = 0; d < rank; ++d) {
      std::string field = sourcePath + "offsets[" + std::to_string(d) + "]";
      int64_t offset = toInt(offsets.items[d], field, 0);
      if (offset > shape[d] - buffer.globalShape[d])
        error(
            "field \"" + field + "\" is " + std::to_string(offset) +
            " but global_shape[" + std::to_string(d) + "] = " +
            std::to_string(buffer.globalShape[d]) + " from there ends at " +
            std::to_string(uint64_t(offset) + uint64_t(buffer.globalShape[d])) +
            ", past source.shape[" + std::to_string(d) +
            "] = " + std::to_string(shape[d]));
      buffer.sourceOffsets[d] = offset;
    }
    for (const auto &entry : source->members)
      if (entry.first != "offsets" && entry.first != "shape")
        error("field \"" + sourcePath + entry.first +
              "\" is not a field of a source (offsets, shape)");
    buffer.hasSource = true;
    buffer.sourceShape = std::move(shape);
  }
  if (const JsonValue *bound = value.get("index_bound");
      bound && !bound->isNull()) {
    if (buffer.role == Role::Output || isFloat(buffer.dtype))
      error("field \"" + path + "index_bound\" is set on " +
            (buffer.role == Role::Output ? std::string("an output")
                                         : std::string("a floating-point ") +
                                               role) +
            "; only integer inputs and params index tensors");
    buffer.indexBound = getInt(value, path, "index_bound", 1);
  }
  // A training step's updated state (checked against the arguments by
  // checkUpdates, Train.cpp).
  if (value.get("updates")) {
    if (buffer.role != Role::Output)
      error("field \"" + path + "updates\" is set on the " + role +
            "; only outputs update arguments");
    buffer.updates = getInt(value, path, "updates", 0);
  }
  return buffer;
}

} // namespace

Model tprun::loadModel(const std::string &path) {
  std::string contents, why;
  if (!readRegularFile(path, contents, why))
    error("cannot open " + path + ": " + why);
  return parseModel(contents);
}

Model tprun::parseModel(const std::string &contents) {
  JsonValue root;
  std::string parseError;
  if (!parseJson(contents, root, parseError))
    error("invalid JSON: " + parseError);
  expectKind(root, JsonValue::Kind::Object, "(document)", "an object");

  Model model;
  const std::string &format = getString(root, "", "format");
  if (format != "tp-model/1")
    error("field \"format\" is \"" + format + "\", expected \"tp-model/1\"");
  model.entry = getString(root, "", "entry");
  if (model.entry.empty())
    error("field \"entry\" is empty");

  const JsonValue &mesh = member(root, "", "mesh");
  expectKind(mesh, JsonValue::Kind::Object, "mesh", "an object");
  const JsonValue &axes = member(mesh, "mesh.", "axes");
  expectKind(axes, JsonValue::Kind::Array, "mesh.axes", "an array");
  int64_t devices = 1;
  for (size_t i = 0; i < axes.items.size(); ++i) {
    std::string axisPath = "mesh.axes[" + std::to_string(i) + "].";
    expectKind(axes.items[i], JsonValue::Kind::Object,
               axisPath.substr(0, axisPath.size() - 1), "an object");
    const std::string &name = getString(axes.items[i], axisPath, "name");
    for (const auto &seen : model.axisNames)
      if (seen == name)
        error("field \"" + axisPath + "name\" repeats the axis \"" + name +
              "\"");
    int64_t size = getInt(axes.items[i], axisPath, "size", 1);
    if (__builtin_mul_overflow(devices, size, &devices) ||
        devices > (int64_t(1) << 30))
      error("field \"mesh.axes\": the mesh has too many devices");
    model.axisNames.push_back(name);
    model.axisSizes.push_back(size);
  }
  if (model.axisNames.size() > 63)
    error("field \"mesh.axes\" has more than 63 axes");

  const JsonValue &buffers = member(root, "", "buffers");
  expectKind(buffers, JsonValue::Kind::Array, "buffers", "an array");
  int64_t nextArgument = 0, nextResult = 0;
  for (size_t i = 0; i < buffers.items.size(); ++i) {
    std::string bufferPath = "buffers[" + std::to_string(i) + "].";
    Buffer buffer = parseBuffer(model, buffers.items[i], bufferPath);
    if (buffer.role == Role::Output) {
      if (buffer.index != nextResult)
        error("field \"" + bufferPath + "index\" is " +
              std::to_string(buffer.index) + ", expected " +
              std::to_string(nextResult) + " (results in order)");
      ++nextResult;
    } else {
      if (nextResult)
        error("field \"" + bufferPath + "role\" is \"" +
              roleName(buffer.role) +
              "\" after an output; arguments come before results");
      if (buffer.index != nextArgument)
        error("field \"" + bufferPath + "index\" is " +
              std::to_string(buffer.index) + ", expected " +
              std::to_string(nextArgument) + " (arguments in order)");
      ++nextArgument;
    }
    model.buffers.push_back(std::move(buffer));
  }

  if (root.get("tokens"))
    model.tokens = getInt(root, "", "tokens", 1);

  const JsonValue &collectives = member(root, "", "collectives");
  expectKind(collectives, JsonValue::Kind::Object, "collectives", "an object");
  for (int k = 0; k < TPRT_NUM_COLLECTIVES; ++k)
    model.collectives[k] =
        getInt(collectives, "collectives.", kCollectiveNames[k], 0);
  for (const auto &entry : collectives.members) {
    bool known = false;
    for (const char *kind : kCollectiveNames)
      known |= entry.first == kind;
    if (!known)
      error("field \"collectives." + entry.first +
            "\" is not a collective (all_reduce, all_gather, reduce_scatter, "
            "all_to_all)");
  }
  checkUpdates(model);
  return model;
}

namespace {

/// `param 1 "w": f32 [8, 6] (local [4, 6], layout [tp, -])`, with what else
/// the compiled code depends on: a partial sum, the argument an output
/// updates.
std::string abiText(const Model &model, const Buffer &buffer) {
  std::string text = std::string(roleName(buffer.role)) + " " +
                     std::to_string(buffer.index) + " \"" + buffer.name +
                     "\": " + dtypeName(buffer.dtype) + " " +
                     shapeText(buffer.globalShape) + " (local " +
                     shapeText(buffer.localShape) + ", layout [";
  for (size_t d = 0; d < buffer.dimAxes.size(); ++d) {
    text += d ? ", " : "";
    if (buffer.dimAxes[d].empty())
      text += "-";
    for (size_t i = 0; i < buffer.dimAxes[d].size(); ++i)
      text += (i ? "*" : "") + model.axisNames[size_t(buffer.dimAxes[d][i])];
  }
  text += "]";
  if (buffer.partial) {
    static const char *const kinds[] = {"sum", "max", "min"};
    text += std::string(", partial ") + kinds[buffer.partialKind] + " over";
    for (int axis : buffer.partialAxes)
      text += " " + model.axisNames[size_t(axis)];
  }
  if (buffer.updates >= 0)
    text += ", updates argument " + std::to_string(buffer.updates);
  return text + ")";
}

} // namespace

std::string tprun::compareCompiledModel(const Model &model,
                                        const Model &compiled) {
  if (model.meshText() != compiled.meshText())
    return "the mesh is " + model.meshText() +
           " but the library was compiled for " + compiled.meshText();
  auto count = [](const Model &m) {
    size_t results = 0;
    for (const Buffer &b : m.buffers)
      results += b.role == Role::Output;
    size_t arguments = m.buffers.size() - results;
    return std::to_string(arguments) +
           (arguments == 1 ? " argument and " : " arguments and ") +
           std::to_string(results) + (results == 1 ? " result" : " results");
  };
  if (model.buffers.size() != compiled.buffers.size())
    return "it lists " + count(model) + " but the library was compiled for " +
           count(compiled);
  for (size_t k = 0; k < model.buffers.size(); ++k) {
    std::string mine = abiText(model, model.buffers[k]);
    std::string theirs = abiText(compiled, compiled.buffers[k]);
    // Names are not part of the compiled code: compare without them.
    Buffer renamed = model.buffers[k];
    renamed.name = compiled.buffers[k].name;
    if (abiText(model, renamed) != theirs)
      return "buffers[" + std::to_string(k) + "] is " + mine +
             " but the library was compiled for " + theirs;
  }
  return "";
}
