//===- InputChecks.cpp - what tp-opt's passes accept as input -------------===//
//
// InputChecks.h says which contracts these checks enforce and why.
//
//===----------------------------------------------------------------------===//

#include "tp/Dialect/TP/IR/InputChecks.h"

#include "tp/Dialect/TP/IR/TPOps.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"

#include "llvm/ADT/StringMap.h"

#include <cctype>

using namespace mlir;
using namespace mlir::tp;

LogicalResult mlir::tp::checkGlobalProgram(func::FuncOp func,
                                           StringRef pass) {
  StringRef globalShape = TPDialect::getGlobalShapeAttrName();
  for (unsigned i = 0; i < func.getNumArguments(); ++i)
    if (func.getArgAttr(i, globalShape))
      return emitError(func.getLoc())
             << pass << ": '" << func.getSymName()
             << "' is already partitioned (argument #" << i << " has "
             << globalShape << "); it takes a program on global shapes";
  for (unsigned i = 0; i < func.getNumResults(); ++i)
    if (func.getResultAttr(i, globalShape))
      return emitError(func.getLoc())
             << pass << ": '" << func.getSymName()
             << "' is already partitioned (result #" << i << " has "
             << globalShape << "); it takes a program on global shapes";
  // A checkpoint tensor fills every argument of its name (tied weights): two
  // arguments of one name must have one type, or no tensor can fill both.
  // (The pieces of a fused weight share its name, each with a tp.source.)
  llvm::StringMap<unsigned> named;
  for (unsigned i = 0; i < func.getNumArguments(); ++i) {
    auto name =
        func.getArgAttrOfType<StringAttr>(i, TPDialect::getNameAttrName());
    if (!name || func.getArgAttr(i, TPDialect::getSourceAttrName()))
      continue;
    auto [it, fresh] = named.try_emplace(name.getValue(), i);
    if (fresh)
      continue;
    unsigned first = it->second;
    Type a = func.getArgument(first).getType(),
         b = func.getArgument(i).getType();
    if (a != b)
      return emitError(func.getArgument(i).getLoc())
             << pass << ": arguments #" << first << " and #" << i << " of '"
             << func.getSymName() << "' are both named \"" << name.getValue()
             << "\" (tp.name) but are " << a << " and " << b
             << ": one checkpoint tensor cannot fill both (tied weights share "
                "a name and a type)";
  }
  // Collectives and axis indices describe one device's part: in a program
  // on global shapes they have no meaning (an all-reduce of a whole value
  // would sum N copies of it).
  WalkResult walk = func.walk([&](Operation *op) {
    if (!isa<AllReduceOp, AllGatherOp, ReduceScatterOp, AllToAllOp, SliceOp,
             AxisIndexOp>(op))
      return WalkResult::advance();
    op->emitError() << pass << ": '" << op->getName()
                    << "' is an op of a partitioned program (each device "
                       "runs it on its part); '"
                    << func.getSymName()
                    << "' is on global shapes, where a layout is pinned with "
                       "tp.annotate or tp.layout instead";
    return WalkResult::interrupt();
  });
  return failure(walk.wasInterrupted());
}

/// Bytes one element of `type` takes in a dense_resource blob.
static std::optional<int64_t> elementBytes(Type type) {
  if (auto complex = dyn_cast<ComplexType>(type)) {
    std::optional<int64_t> part = elementBytes(complex.getElementType());
    return part ? std::optional<int64_t>(2 * *part) : std::nullopt;
  }
  if (type.isIndex())
    return 8;
  if (type.isIntOrFloat())
    return (type.getIntOrFloatBitWidth() + 7) / 8;
  return std::nullopt;
}

LogicalResult mlir::tp::checkResourceBlobs(Operation *root, StringRef pass) {
  WalkResult walk = root->walk([&](Operation *op) {
    WalkResult inner = op->getAttrDictionary().walk(
        [&](DenseResourceElementsAttr attr) {
          DenseResourceElementsHandle handle = attr.getRawHandle();
          ShapedType type = attr.getType();
          const AsmResourceBlob *blob = handle.getBlob();
          if (!blob) {
            op->emitError() << pass << ": dense_resource<" << handle.getKey()
                            << "> of type " << type
                            << " has no data (the file's dialect_resources "
                               "section lacks it)";
            return WalkResult::interrupt();
          }
          std::optional<int64_t> bytes = elementBytes(type.getElementType());
          if (!bytes || !type.hasStaticShape())
            return WalkResult::advance();
          int64_t held = blob->getData().size();
          int64_t needed = type.getNumElements() * *bytes;
          if (held == needed)
            return WalkResult::advance();
          op->emitError() << pass << ": dense_resource<" << handle.getKey()
                          << "> holds " << held << " bytes of data, but "
                          << type << " takes " << needed << " ("
                          << type.getNumElements() << " elements of " << *bytes
                          << " bytes)";
          return WalkResult::interrupt();
        });
    return inner.wasInterrupted() ? WalkResult::interrupt()
                                  : WalkResult::advance();
  });
  return failure(walk.wasInterrupted());
}

std::optional<tp::UpstreamCrash>
mlir::tp::findUpstreamParserCrash(StringRef text) {
  static constexpr StringLiteral list =
      "malformed integer list (a list of 64-bit integers expected): MLIR "
      "22's parser cannot read it";
  // An empty reassociation group (`[[0, 1], []]`) on a line of
  // tensor.expand_shape / collapse_shape: MLIR 22's verifier reads past it.
  // (An empty reassociation, `[]` alone, collapses to 0-d and is fine.)
  for (size_t pos = 0; (pos = text.find('[', pos)) != StringRef::npos;
       ++pos) {
    if (!text.drop_front(pos + 1).ltrim().starts_with("]"))
      continue;
    StringRef before = text.take_front(pos).rtrim();
    if (!before.ends_with(",") && !before.ends_with("["))
      continue;
    size_t lineStart = text.rfind('\n', pos);
    lineStart = lineStart == StringRef::npos ? 0 : lineStart + 1;
    StringRef line = text.slice(lineStart, text.find('\n', pos));
    if ((line.contains("expand_shape") || line.contains("collapse_shape")) &&
        !text.slice(lineStart, pos).contains("//"))
      return UpstreamCrash{pos, "empty reassociation group: MLIR 22's "
                                "verifier cannot check it"};
  }
  for (StringRef key : {"dimensions", "permutation"}) {
    size_t pos = 0;
    while ((pos = text.find(key, pos)) != StringRef::npos) {
      size_t at = pos;
      pos += key.size();
      // The keyword itself, outside a comment (a note that mentions
      // "dimensions = 3" in words is not an op's list).
      if (at > 0 && (isalnum(text[at - 1]) || text[at - 1] == '_' ||
                     text[at - 1] == '.'))
        continue;
      size_t lineStart = text.rfind('\n', at);
      lineStart = lineStart == StringRef::npos ? 0 : lineStart + 1;
      if (text.slice(lineStart, at).contains("//") ||
          text.slice(lineStart, at).count('"') % 2)
        continue;
      StringRef rest = text.drop_front(pos).ltrim();
      if (!rest.consume_front("="))
        continue;
      rest = rest.ltrim();
      if (!rest.consume_front("["))
        return UpstreamCrash{at, list}; // e.g. `dimensions = 3`
      rest = rest.ltrim();
      if (rest.consume_front("]"))
        continue;
      // Integers separated by commas, then ']', each within 64 bits.
      while (true) {
        bool negative = rest.consume_front("-");
        size_t digits = rest.find_first_not_of("0123456789");
        if (digits == 0 || digits == StringRef::npos)
          return UpstreamCrash{at, list};
        int64_t value;
        std::string number =
            (negative ? "-" : "") + rest.take_front(digits).str();
        if (StringRef(number).getAsInteger(10, value))
          return UpstreamCrash{at, list}; // beyond 64 bits
        rest = rest.drop_front(digits).ltrim();
        if (rest.consume_front("]"))
          break;
        if (!rest.consume_front(","))
          return UpstreamCrash{at, list};
        rest = rest.ltrim();
      }
    }
  }
  return std::nullopt;
}
