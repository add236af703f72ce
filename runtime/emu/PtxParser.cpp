//===- PtxParser.cpp - PTX text to decoded kernels ------------------------===//
//
// See Ptx.h. The parser reads the subset of PTX that a code generator
// writes (LLVM's NVPTX back end in particular): module directives
// (.version, .target, .address_size), module variables (.global/.const
// with initializers, .shared), extern declarations, and kernels (.entry)
// with their parameters, performance directives (.maxntid, .reqntid) and
// bodies: register, shared, local and param declarations, labels, nested
// `{ }` scopes and instructions with an optional guard. What it does not
// know is an error naming the line, never a silent skip: a kernel the
// emulator cannot run exactly must not run at all.
//
// Non-kernel functions (.func) are accepted as declarations; a call is
// decoded only for the device runtime's __assertfail (a failed assert in
// a kernel), which the emulator reports with its message.
//
//===----------------------------------------------------------------------===//

#include "Decode.h"
#include "Ptx.h"

#include <cctype>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <unordered_map>

#ifdef TPRT_EMU_HAVE_ZSTD
#include <zstd.h>
#endif

using namespace tprt::emu;

namespace {

//===----------------------------------------------------------------------===//
// Tokens
//===----------------------------------------------------------------------===//

struct Token {
  enum class Kind { Word, Number, String, Punct, End };
  Kind kind = Kind::End;
  std::string text;
  uint32_t line = 0;
};

bool wordStart(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == '$' ||
         c == '%' || c == '.';
}
bool wordChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$' ||
         c == '.';
}

bool tokenize(const std::string &text, std::vector<Token> &tokens,
              std::string &error) {
  uint32_t line = 1;
  size_t i = 0, n = text.size();
  while (i < n) {
    char c = text[i];
    if (c == '\n') {
      ++line;
      ++i;
      continue;
    }
    if (std::isspace(static_cast<unsigned char>(c)) || c == '\0') {
      ++i;
      continue;
    }
    if (c == '/' && i + 1 < n && text[i + 1] == '/') {
      while (i < n && text[i] != '\n')
        ++i;
      continue;
    }
    if (c == '/' && i + 1 < n && text[i + 1] == '*') {
      i += 2;
      while (i + 1 < n && !(text[i] == '*' && text[i + 1] == '/')) {
        if (text[i] == '\n')
          ++line;
        ++i;
      }
      i += 2;
      continue;
    }
    Token token;
    token.line = line;
    if (c == '"') {
      size_t start = ++i;
      while (i < n && text[i] != '"')
        ++i;
      token.kind = Token::Kind::String;
      token.text = text.substr(start, i - start);
      ++i;
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      size_t start = i;
      while (i < n && (std::isalnum(static_cast<unsigned char>(text[i])) ||
                       text[i] == '.'))
        ++i;
      token.kind = Token::Kind::Number;
      token.text = text.substr(start, i - start);
    } else if (wordStart(c)) {
      size_t start = i++;
      // Words may carry `::` qualifiers (`.shared::cta`, `L1::evict_last`).
      while (i < n && (wordChar(text[i]) ||
                       (text[i] == ':' && i + 2 < n && text[i + 1] == ':' &&
                        wordChar(text[i + 2])))) {
        if (text[i] == ':')
          ++i;
        ++i;
      }
      token.kind = Token::Kind::Word;
      token.text = text.substr(start, i - start);
    } else if (std::strchr(",;:{}[]()+-<>@!|=", c)) {
      token.kind = Token::Kind::Punct;
      token.text = std::string(1, c);
      ++i;
    } else {
      error = "line " + std::to_string(line) + ": unexpected character '" +
              std::string(1, c) + "'";
      return false;
    }
    tokens.push_back(std::move(token));
  }
  Token end;
  end.line = line;
  tokens.push_back(end);
  return true;
}

//===----------------------------------------------------------------------===//
// Numbers
//===----------------------------------------------------------------------===//

/// Parses an integer or float literal; `negative` applies a leading '-'.
bool parseNumber(const std::string &text, bool negative, Operand &out) {
  out.kind = Operand::Kind::Immediate;
  if (text.size() > 2 && text[0] == '0' &&
      (text[1] == 'f' || text[1] == 'F' || text[1] == 'd' || text[1] == 'D')) {
    char *end = nullptr;
    uint64_t bits = std::strtoull(text.c_str() + 2, &end, 16);
    if (*end)
      return false;
    out.isFloat = true;
    out.isDouble = text[1] == 'd' || text[1] == 'D';
    if (negative)
      bits ^= out.isDouble ? (uint64_t(1) << 63) : (uint64_t(1) << 31);
    out.bits = bits;
    return true;
  }
  if (text.find('.') != std::string::npos ||
      (text.find_first_of("eE") != std::string::npos &&
       text.find_first_of("xX") == std::string::npos)) {
    char *end = nullptr;
    double value = std::strtod(text.c_str(), &end);
    if (*end)
      return false;
    out.isFloat = true;
    out.decimal = negative ? -value : value;
    return true;
  }
  std::string digits = text;
  while (!digits.empty() && (digits.back() == 'U' || digits.back() == 'u'))
    digits.pop_back();
  int base = 10;
  const char *start = digits.c_str();
  if (digits.size() > 2 && digits[0] == '0' &&
      (digits[1] == 'x' || digits[1] == 'X')) {
    base = 16;
    start += 2;
  } else if (digits.size() > 2 && digits[0] == '0' &&
             (digits[1] == 'b' || digits[1] == 'B')) {
    base = 2;
    start += 2;
  } else if (digits.size() > 1 && digits[0] == '0') {
    base = 8;
    start += 1;
  }
  char *end = nullptr;
  uint64_t value = std::strtoull(start, &end, base);
  if (*end || end == start)
    return false;
  out.bits = negative ? uint64_t(0) - value : value;
  return true;
}

//===----------------------------------------------------------------------===//
// The parser
//===----------------------------------------------------------------------===//

uint32_t alignTo(uint32_t value, uint32_t align) {
  return align ? (value + align - 1) / align * align : value;
}

/// A module-scope `.shared` variable (laid out first in every kernel's
/// shared window).
struct ModuleShared {
  uint32_t offset, bytes;
};

class Parser;

/// DecodeContext of one kernel body.
class KernelScope : public DecodeContext {
public:
  KernelScope(Parser &parser, Kernel &kernel) : parser(parser), kernel(kernel) {}

  int32_t registerOf(const Operand &operand, Type type,
                     std::string &error) override;
  int64_t labelIndex(const std::string &label, std::string &error) override;
  Space spaceOfSymbol(const std::string &name) override;
  int32_t callSlot(const std::string &name) override {
    int32_t reg = lookup(name);
    return reg >= 0 && callSlots.count(name) ? reg : -1;
  }
  const std::string &kernelName() override { return kernel.name; }

  Parser &parser;
  Kernel &kernel;
  /// Declared registers, by name; scopes push and pop names.
  std::vector<std::unordered_map<std::string, int32_t>> registers{1};
  std::unordered_map<std::string, int64_t> labels;
  /// Branch targets to resolve after the body: (instruction, label).
  std::vector<std::pair<size_t, std::string>> fixups;
  std::unordered_map<std::string, uint32_t> shared; // offset
  std::unordered_map<std::string, uint32_t> local;  // offset
  std::unordered_map<std::string, uint32_t> params; // offset
  std::unordered_map<uint64_t, int32_t> constants;
  std::unordered_map<int, int32_t> specials;
  std::unordered_map<std::string, int32_t> symbols;
  bool dynamicShared = false;
  std::unordered_map<std::string, int32_t> callSlots;

  int32_t newRegister() { return kernel.registers++; }
  int32_t lookup(const std::string &name) const {
    for (auto it = registers.rbegin(); it != registers.rend(); ++it) {
      auto found = it->find(name);
      if (found != it->end())
        return found->second;
    }
    return -1;
  }
  int32_t constant(uint64_t bits) {
    auto it = constants.find(bits);
    if (it != constants.end())
      return it->second;
    int32_t reg = newRegister();
    kernel.inits.push_back({reg, RegisterInit::Kind::Constant, bits});
    constants[bits] = reg;
    return reg;
  }
  int32_t special(RegisterInit::Kind kind) {
    auto it = specials.find(int(kind));
    if (it != specials.end())
      return it->second;
    int32_t reg = newRegister();
    kernel.inits.push_back({reg, kind, 0});
    specials[int(kind)] = reg;
    return reg;
  }
};

class Parser {
public:
  Parser(const std::string &text, Module &module)
      : text(text), module(module) {}

  bool run(std::string &error);

  std::unordered_map<std::string, GlobalVariable *> globals;
  std::unordered_map<std::string, ModuleShared> moduleShared;
  uint32_t moduleSharedBytes = 0;

private:
  const std::string &text;
  Module &module;
  std::vector<Token> tokens;
  size_t at = 0;
  std::string failure;

  const Token &peek(size_t ahead = 0) const {
    return tokens[std::min(at + ahead, tokens.size() - 1)];
  }
  const Token &next() {
    const Token &t = peek();
    if (at < tokens.size() - 1)
      ++at;
    return t;
  }
  bool is(const char *text, size_t ahead = 0) const {
    return peek(ahead).kind != Token::Kind::End && peek(ahead).text == text;
  }
  bool accept(const char *text) {
    if (!is(text))
      return false;
    next();
    return true;
  }
  bool fail(const std::string &message) {
    if (failure.empty())
      failure = "line " + std::to_string(peek().line) + ": " + message;
    return false;
  }
  bool fail(uint32_t line, const std::string &message) {
    if (failure.empty())
      failure = "line " + std::to_string(line) + ": " + message;
    return false;
  }
  bool expect(const char *text) {
    if (accept(text))
      return true;
    return fail(std::string("expected '") + text + "', found '" + peek().text +
                "'");
  }
  /// Skips to the end of the statement (past ';').
  void skipStatement() {
    while (peek().kind != Token::Kind::End && !is(";"))
      next();
    accept(";");
  }
  void skipLine() {
    uint32_t line = peek().line;
    while (peek().kind != Token::Kind::End && peek().line == line)
      next();
  }

  bool topLevel();
  bool variable(const std::string &space, KernelScope *scope);
  bool entry(bool isEntry);
  bool parameter(Kernel &kernel, KernelScope &scope, uint32_t &offset);
  bool body(KernelScope &scope);
  bool declaration(KernelScope &scope);
  bool statement(KernelScope &scope);
  bool operand(Operand &out);
  bool typeAndArray(Type &type, uint32_t &align, uint64_t &count,
                    bool &isArray, std::string &name);
};

bool Parser::run(std::string &error) {
  if (!tokenize(text, tokens, error))
    return false;
  // Keep the lines for messages.
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos)
      end = text.size();
    // One space between words, for messages that quote the line.
    std::string line;
    for (size_t i = start; i < end; ++i) {
      char c = text[i] == '\t' || text[i] == '\r' ? ' ' : text[i];
      if (c != ' ' || (!line.empty() && line.back() != ' '))
        line += c;
    }
    while (!line.empty() && line.back() == ' ')
      line.pop_back();
    module.lines.push_back(line);
    start = end + 1;
  }
  while (peek().kind != Token::Kind::End) {
    if (!topLevel()) {
      error = failure.empty() ? "cannot parse the PTX" : failure;
      return false;
    }
  }
  return true;
}

bool Parser::topLevel() {
  const Token &t = peek();
  if (t.text == ".version" || t.text == ".address_size") {
    skipLine();
    return true;
  }
  if (t.text == ".target") {
    next();
    module.target = peek().text;
    skipLine();
    return true;
  }
  if (t.text == ".file" || t.text == ".loc") {
    skipLine();
    return true;
  }
  if (t.text == ".section") {
    // Debug sections: skip the braces.
    while (peek().kind != Token::Kind::End && !is("{"))
      next();
    int depth = 0;
    do {
      if (is("{"))
        ++depth;
      else if (is("}"))
        --depth;
      next();
    } while (depth > 0 && peek().kind != Token::Kind::End);
    return true;
  }
  // Linkage prefixes.
  bool external = false;
  while (is(".visible") || is(".extern") || is(".weak") || is(".common")) {
    external |= is(".extern");
    next();
  }
  if (is(".entry") || is(".func")) {
    bool isEntry = is(".entry");
    next();
    if (external || !isEntry) {
      // A declaration, or a function we only call by name: skip it,
      // braces included.
      int depth = 0;
      while (peek().kind != Token::Kind::End) {
        if (is("{"))
          ++depth;
        else if (is("}")) {
          if (--depth == 0) {
            next();
            return true;
          }
        } else if (is(";") && depth == 0) {
          next();
          return true;
        }
        next();
      }
      return true;
    }
    return entry(true);
  }
  if (is(".global") || is(".const") || is(".shared")) {
    std::string space = next().text;
    if (external && space == ".shared")
      return variable(".extern.shared", nullptr);
    return variable(space, nullptr);
  }
  return fail("unexpected '" + t.text + "' at module scope");
}

bool Parser::typeAndArray(Type &type, uint32_t &align, uint64_t &count,
                          bool &isArray, std::string &name) {
  align = 0;
  type = Type::None;
  while (peek().kind == Token::Kind::Word && peek().text[0] == '.') {
    std::string word = next().text;
    if (word == ".align") {
      Operand number;
      if (peek().kind != Token::Kind::Number ||
          !parseNumber(next().text, false, number))
        return fail("expected an alignment");
      align = uint32_t(number.bits);
    } else if (word == ".ptr" || word == ".global" || word == ".shared" ||
               word == ".local" || word == ".const") {
      // `.ptr .global .align 4`: an attribute of a pointer parameter.
    } else if (typeOf(word.substr(1)) != Type::None) {
      type = typeOf(word.substr(1));
    } else if (word == ".v2" || word == ".v4") {
      return fail("vector variables are not supported by the emulator");
    } else {
      return fail("unexpected '" + word + "' in a declaration");
    }
  }
  if (type == Type::None)
    return fail("a declaration without a type");
  if (peek().kind != Token::Kind::Word)
    return fail("expected a name");
  name = next().text;
  count = 1;
  isArray = false;
  if (accept("[")) {
    isArray = true;
    if (is("]")) {
      count = 0; // an unsized extern array
    } else {
      Operand number;
      if (peek().kind != Token::Kind::Number ||
          !parseNumber(next().text, false, number))
        return fail("expected an array size");
      count = number.bits;
    }
    if (!expect("]"))
      return false;
  }
  if (!align)
    align = typeBytes(type);
  return true;
}

bool Parser::variable(const std::string &space, KernelScope *scope) {
  Type type;
  uint32_t align;
  uint64_t count;
  bool isArray;
  std::string name;
  uint32_t line = peek().line;
  if (!typeAndArray(type, align, count, isArray, name))
    return false;
  uint64_t bytes = count * typeBytes(type);
  if (bytes > (uint64_t(1) << 32))
    return fail(line, "variable " + name + " is too large");
  if (space == ".global" || space == ".const") {
    auto var = std::make_unique<GlobalVariable>();
    var->name = name;
    var->bytes.assign(size_t(bytes), 0);
    if (accept("=")) {
      // {b0, b1, ...} or a scalar.
      std::vector<uint64_t> values;
      bool braces = accept("{");
      while (!is(";") && !is("}") && peek().kind != Token::Kind::End) {
        bool negative = accept("-");
        Operand number;
        if (peek().kind != Token::Kind::Number ||
            !parseNumber(next().text, negative, number))
          return fail("expected a number in the initializer of " + name);
        if (number.isFloat && !number.isDouble && number.decimal == 0 &&
            typeBytes(type) == 8 && isFloatType(type))
          number.bits = 0;
        values.push_back(number.bits);
        if (!accept(","))
          break;
      }
      if (braces && !expect("}"))
        return false;
      unsigned width = typeBytes(type);
      if (values.size() * width > var->bytes.size())
        return fail(line, "the initializer of " + name + " is too long");
      for (size_t i = 0; i < values.size(); ++i)
        std::memcpy(var->bytes.data() + i * width, &values[i], width);
    }
    if (!expect(";"))
      return false;
    globals[name] = var.get();
    module.globals.push_back(std::move(var));
    return true;
  }
  if (space == ".shared" || space == ".extern.shared") {
    if (!expect(";"))
      return false;
    if (scope) {
      if (space == ".extern.shared" || (isArray && count == 0)) {
        scope->dynamicShared = true;
        scope->shared[name] = ~0u; // resolved at the end of the body
        return true;
      }
      uint32_t offset = alignTo(scope->kernel.staticShared, align);
      scope->shared[name] = offset;
      scope->kernel.staticShared = offset + uint32_t(bytes);
      return true;
    }
    if (space == ".extern.shared" || (isArray && count == 0)) {
      moduleShared[name] = {~0u, 0};
      return true;
    }
    uint32_t offset = alignTo(moduleSharedBytes, align);
    moduleShared[name] = {offset, uint32_t(bytes)};
    moduleSharedBytes = offset + uint32_t(bytes);
    return true;
  }
  if (space == ".local" && scope) {
    if (!expect(";"))
      return false;
    uint32_t offset = alignTo(scope->kernel.localBytes, align);
    scope->local[name] = offset;
    scope->kernel.localBytes = offset + uint32_t(bytes);
    return true;
  }
  return fail(line, "unsupported variable space " + space);
}

bool Parser::parameter(Kernel &kernel, KernelScope &scope, uint32_t &offset) {
  if (!expect(".param"))
    return false;
  bool pointer = false;
  for (size_t k = 0; peek(k).kind == Token::Kind::Word &&
                     peek(k).text[0] == '.';
       ++k)
    pointer |= peek(k).text == ".ptr";
  Type type;
  uint32_t align;
  uint64_t count;
  bool isArray;
  std::string name;
  if (!typeAndArray(type, align, count, isArray, name))
    return false;
  Param param;
  param.name = name;
  param.bytes = uint32_t(count * typeBytes(type));
  param.pointer = pointer;
  offset = alignTo(offset, align);
  param.offset = offset;
  offset += param.bytes;
  scope.params[name] = param.offset;
  kernel.params.push_back(param);
  return true;
}

bool Parser::entry(bool) {
  auto kernel = std::make_unique<Kernel>();
  kernel->line = peek().line;
  if (peek().kind != Token::Kind::Word)
    return fail("expected a kernel name");
  kernel->name = next().text;
  KernelScope scope(*this, *kernel);
  uint32_t offset = 0;
  if (accept("(")) {
    while (!is(")")) {
      if (!parameter(*kernel, scope, offset))
        return false;
      if (!accept(","))
        break;
    }
    if (!expect(")"))
      return false;
  }
  kernel->paramBytes = offset;
  // Performance directives.
  while (peek().kind == Token::Kind::Word && peek().text[0] == '.') {
    std::string directive = next().text;
    std::vector<uint64_t> values;
    while (peek().kind == Token::Kind::Number) {
      Operand number;
      parseNumber(next().text, false, number);
      values.push_back(number.bits);
      if (!accept(","))
        break;
    }
    if (directive == ".maxntid" || directive == ".reqntid") {
      uint64_t product = 1;
      for (uint64_t v : values)
        product *= v;
      kernel->maxThreads = uint32_t(product);
      if (directive == ".reqntid")
        for (size_t i = 0; i < values.size() && i < 3; ++i)
          kernel->requiredThreads[i] = uint32_t(values[i]);
    }
    // .minnctapersm, .maxnreg, .noreturn, ...: hints.
  }
  if (!expect("{"))
    return false;
  // Module-scope shared variables come first in every kernel's window.
  kernel->staticShared = moduleSharedBytes;
  if (!body(scope))
    return false;
  // Labels.
  for (auto &fixup : scope.fixups) {
    auto it = scope.labels.find(fixup.second);
    if (it == scope.labels.end())
      return fail(kernel->code[fixup.first].line,
                  "branch to an unknown label " + fixup.second);
    kernel->code[fixup.first].target = it->second;
  }
  kernel->dynamicSharedOffset = alignTo(kernel->staticShared, 16);
  // Resolve dynamic shared variables now that the static size is known.
  for (RegisterInit &init : kernel->inits)
    if (init.kind == RegisterInit::Kind::SharedBase && init.value == ~0ull)
      init.value = kernel->dynamicSharedOffset;
  if (kernel->code.empty() || kernel->code.back().flow != Flow::Exit) {
    // Falling off the end of a kernel is its return.
    Inst ret;
    ret.flow = Flow::Exit;
    ret.line = kernel->line;
    ret.index = uint32_t(kernel->code.size());
    kernel->code.push_back(ret);
  }
  std::string name = kernel->name;
  module.kernels[name] = std::move(kernel);
  return true;
}

bool Parser::body(KernelScope &scope) {
  int depth = 1;
  while (peek().kind != Token::Kind::End) {
    if (accept("{")) {
      ++depth;
      scope.registers.emplace_back();
      continue;
    }
    if (accept("}")) {
      if (--depth == 0)
        return true;
      scope.registers.pop_back();
      continue;
    }
    if (peek().kind == Token::Kind::Word && is(":", 1)) {
      scope.labels[next().text] = int64_t(scope.kernel.code.size());
      next();
      continue;
    }
    if (peek().kind == Token::Kind::Word && peek().text[0] == '.') {
      if (!declaration(scope))
        return false;
      continue;
    }
    if (!statement(scope))
      return false;
  }
  return fail("unterminated kernel body");
}

bool Parser::declaration(KernelScope &scope) {
  std::string directive = next().text;
  if (directive == ".reg") {
    Type type = Type::None;
    while (peek().kind == Token::Kind::Word && peek().text[0] == '.') {
      std::string word = next().text;
      if (word == ".v2" || word == ".v4")
        return fail("vector registers are not supported by the emulator");
      type = typeOf(word.substr(1));
    }
    if (type == Type::None)
      return fail("a register declaration without a type");
    while (!is(";")) {
      if (peek().kind != Token::Kind::Word)
        return fail("expected a register name");
      std::string name = next().text;
      if (accept("<")) {
        Operand number;
        if (peek().kind != Token::Kind::Number ||
            !parseNumber(next().text, false, number))
          return fail("expected a register count");
        if (!expect(">"))
          return false;
        if (number.bits > 1000000)
          return fail("too many registers");
        for (uint64_t i = 0; i < number.bits; ++i)
          scope.registers.back()[name + std::to_string(i)] =
              scope.newRegister();
      } else {
        scope.registers.back()[name] = scope.newRegister();
      }
      if (!accept(","))
        break;
    }
    return expect(";");
  }
  if (directive == ".shared" || directive == ".local")
    return variable(directive, &scope);
  if (directive == ".extern" && accept(".shared"))
    return variable(".extern.shared", &scope);
  if (directive == ".pragma") {
    skipStatement();
    return true;
  }
  if (directive == ".loc" || directive == ".file") {
    skipLine();
    return true;
  }
  if (directive == ".param") {
    // A call's argument or return slot (`{ .param .b64 param0; st.param.b64
    // [param0], %rd1; call ... }`): a register of the scope, which
    // st.param / ld.param move to and from.
    Type type;
    uint32_t align;
    uint64_t count;
    bool isArray;
    std::string name;
    if (!typeAndArray(type, align, count, isArray, name))
      return false;
    if (isArray || typeBytes(type) > 8)
      return fail("call parameter " + name + " is an aggregate, which the "
                  "emulator does not support");
    int32_t reg = scope.newRegister();
    scope.registers.back()[name] = reg;
    scope.callSlots[name] = reg;
    return expect(";");
  }
  return fail("unsupported directive " + directive + " in a kernel body");
}

bool Parser::operand(Operand &out) {
  bool negative = false;
  if (accept("!")) {
    out.negated = true;
  }
  if (accept("-"))
    negative = true;
  const Token &t = peek();
  if (t.kind == Token::Kind::Number) {
    if (!parseNumber(next().text, negative, out))
      return fail("bad number '" + t.text + "'");
    return true;
  }
  if (accept("[")) {
    out.kind = Operand::Kind::Address;
    if (peek().kind == Token::Kind::Word) {
      out.name = next().text;
    } else if (peek().kind == Token::Kind::Number) {
      // An absolute address.
      Operand number;
      if (!parseNumber(next().text, false, number))
        return fail("bad address");
      out.offset = int64_t(number.bits);
      return expect("]");
    } else {
      return fail("expected an address");
    }
    while (is("+") || is("-")) {
      bool minus = next().text == "-";
      if (accept("-"))
        minus = !minus;
      Operand number;
      if (peek().kind != Token::Kind::Number ||
          !parseNumber(next().text, false, number))
        return fail("expected an address offset");
      out.offset += minus ? -int64_t(number.bits) : int64_t(number.bits);
    }
    return expect("]");
  }
  if (accept("{")) {
    out.kind = Operand::Kind::Vector;
    while (!is("}")) {
      Operand element;
      if (!operand(element))
        return false;
      out.elements.push_back(element);
      if (!accept(","))
        break;
    }
    return expect("}");
  }
  if (accept("(")) {
    out.kind = Operand::Kind::List;
    while (!is(")")) {
      Operand element;
      if (!operand(element))
        return false;
      out.elements.push_back(element);
      if (!accept(","))
        break;
    }
    return expect(")");
  }
  if (t.kind == Token::Kind::Word) {
    std::string word = next().text;
    if (word == "_") {
      out.kind = Operand::Kind::Sink;
      return true;
    }
    out.kind = word[0] == '%' ? Operand::Kind::Register : Operand::Kind::Symbol;
    out.name = word;
    if (accept("|")) {
      if (peek().kind != Token::Kind::Word)
        return fail("expected a predicate after '|'");
      out.second = next().text;
    }
    // A symbol plus an offset: `name+4` (mov of an address).
    while (out.kind == Operand::Kind::Symbol && (is("+") || is("-"))) {
      bool minus = next().text == "-";
      Operand number;
      if (peek().kind != Token::Kind::Number ||
          !parseNumber(next().text, false, number))
        return fail("expected an offset");
      out.offset += minus ? -int64_t(number.bits) : int64_t(number.bits);
    }
    return true;
  }
  return fail("unexpected '" + t.text + "' in an operand");
}

bool Parser::statement(KernelScope &scope) {
  Statement st;
  st.line = peek().line;
  if (accept("@")) {
    st.guardNegated = accept("!");
    if (peek().kind != Token::Kind::Word)
      return fail("expected a guard predicate");
    st.guard = next().text;
  }
  if (peek().kind != Token::Kind::Word)
    return fail("expected an instruction, found '" + peek().text + "'");
  std::string opcode = next().text;
  size_t start = 0;
  while (start <= opcode.size()) {
    size_t dot = opcode.find('.', start);
    if (dot == std::string::npos)
      dot = opcode.size();
    if (dot > start)
      st.opcode.push_back(opcode.substr(start, dot - start));
    start = dot + 1;
  }
  while (!is(";")) {
    if (peek().kind == Token::Kind::End)
      return fail("unterminated instruction");
    Operand op;
    if (!operand(op))
      return false;
    st.operands.push_back(op);
    if (!accept(","))
      break;
  }
  if (!expect(";"))
    return false;
  Inst inst;
  inst.line = st.line;
  std::string error;
  if (!decode(st, inst, scope, error))
    return fail(st.line, error);
  inst.index = uint32_t(scope.kernel.code.size());
  if (inst.flow == Flow::Branch) {
    const Operand &target = st.operands.empty() ? Operand() : st.operands[0];
    if (target.kind != Operand::Kind::Symbol)
      return fail(st.line, "a branch needs a label");
    scope.fixups.push_back({scope.kernel.code.size(), target.name});
  }
  scope.kernel.code.push_back(inst);
  return true;
}

//===----------------------------------------------------------------------===//
// KernelScope
//===----------------------------------------------------------------------===//

struct SpecialName {
  const char *name;
  RegisterInit::Kind kind;
};

const SpecialName kSpecials[] = {
    {"%tid.x", RegisterInit::Kind::TidX},
    {"%tid.y", RegisterInit::Kind::TidY},
    {"%tid.z", RegisterInit::Kind::TidZ},
    {"%ntid.x", RegisterInit::Kind::NtidX},
    {"%ntid.y", RegisterInit::Kind::NtidY},
    {"%ntid.z", RegisterInit::Kind::NtidZ},
    {"%ctaid.x", RegisterInit::Kind::CtaidX},
    {"%ctaid.y", RegisterInit::Kind::CtaidY},
    {"%ctaid.z", RegisterInit::Kind::CtaidZ},
    {"%nctaid.x", RegisterInit::Kind::NctaidX},
    {"%nctaid.y", RegisterInit::Kind::NctaidY},
    {"%nctaid.z", RegisterInit::Kind::NctaidZ},
    {"%laneid", RegisterInit::Kind::LaneId},
    {"%warpid", RegisterInit::Kind::WarpId},
    {"%nwarpid", RegisterInit::Kind::NwarpId},
    {"%lanemask_eq", RegisterInit::Kind::LanemaskEq},
    {"%lanemask_lt", RegisterInit::Kind::LanemaskLt},
    {"%lanemask_le", RegisterInit::Kind::LanemaskLe},
    {"%lanemask_gt", RegisterInit::Kind::LanemaskGt},
    {"%lanemask_ge", RegisterInit::Kind::LanemaskGe},
    {"%clock", RegisterInit::Kind::Clock},
    {"%clock64", RegisterInit::Kind::Clock64},
    {"%globaltimer", RegisterInit::Kind::GlobalTimer},
    {"%smid", RegisterInit::Kind::SmId},
    {"%nsmid", RegisterInit::Kind::NsmId},
    {"%gridid", RegisterInit::Kind::GridId},
    {"%dynamic_smem_size", RegisterInit::Kind::DynamicSmemSize},
    {"%total_smem_size", RegisterInit::Kind::TotalSmemSize},
};

int32_t KernelScope::registerOf(const Operand &operand, Type type,
                                std::string &error) {
  switch (operand.kind) {
  case Operand::Kind::Register: {
    int32_t reg = lookup(operand.name);
    if (reg >= 0)
      return reg;
    for (const SpecialName &s : kSpecials)
      if (operand.name == s.name)
        return special(s.kind);
    error = "unknown register " + operand.name;
    return -1;
  }
  case Operand::Kind::Immediate: {
    uint64_t bits = operand.bits;
    if (operand.isFloat && !operand.isDouble && operand.decimal == 0 &&
        type == Type::F64) {
      // 0f literal widened to f64.
      float f;
      uint32_t b = uint32_t(bits);
      std::memcpy(&f, &b, 4);
      double d = f;
      std::memcpy(&bits, &d, 8);
    } else if (operand.isFloat && operand.decimal != 0) {
      if (type == Type::F64) {
        std::memcpy(&bits, &operand.decimal, 8);
      } else {
        float f = float(operand.decimal);
        uint32_t b;
        std::memcpy(&b, &f, 4);
        bits = b;
      }
    }
    return constant(bits);
  }
  case Operand::Kind::Symbol: {
    // A register declared without a `%` (libdevice's f64 code: `{ .reg .b32
    // tmp; mov.b64 {tmp, %r3}, %rd9; }`), innermost scope first.
    if (operand.offset == 0)
      if (int32_t reg = lookup(operand.name); reg >= 0)
        return reg;
    std::string key = operand.name + "+" + std::to_string(operand.offset);
    auto it = symbols.find(key);
    if (it != symbols.end())
      return it->second;
    int32_t reg = -1;
    if (auto p = params.find(operand.name); p != params.end()) {
      reg = constant(p->second + uint64_t(operand.offset));
    } else if (auto s = shared.find(operand.name); s != shared.end()) {
      reg = newRegister();
      kernel.inits.push_back(
          {reg, RegisterInit::Kind::SharedBase,
           s->second == ~0u ? ~0ull : s->second + uint64_t(operand.offset)});
    } else if (auto m = parser.moduleShared.find(operand.name);
               m != parser.moduleShared.end()) {
      reg = newRegister();
      kernel.inits.push_back({reg, RegisterInit::Kind::SharedBase,
                              m->second.offset == ~0u
                                  ? ~0ull
                                  : m->second.offset + uint64_t(operand.offset)});
    } else if (auto l = local.find(operand.name); l != local.end()) {
      reg = constant(l->second + uint64_t(operand.offset));
    } else if (auto g = parser.globals.find(operand.name);
               g != parser.globals.end()) {
      reg = constant(reinterpret_cast<uintptr_t>(g->second->bytes.data()) +
                     uint64_t(operand.offset));
    } else {
      error = "unknown symbol " + operand.name;
      return -1;
    }
    symbols[key] = reg;
    return reg;
  }
  default:
    error = "expected a register, an immediate or a symbol";
    return -1;
  }
}

int64_t KernelScope::labelIndex(const std::string &label, std::string &) {
  auto it = labels.find(label);
  return it == labels.end() ? -1 : it->second;
}

Space KernelScope::spaceOfSymbol(const std::string &name) {
  if (params.count(name))
    return Space::Param;
  if (shared.count(name) || parser.moduleShared.count(name))
    return Space::Shared;
  if (local.count(name))
    return Space::Local;
  if (parser.globals.count(name))
    return Space::Global;
  return Space::Generic;
}

} // namespace

std::unique_ptr<Module> tprt::emu::parsePtx(const std::string &text,
                                            std::string &error) {
  auto module = std::make_unique<Module>();
  Parser parser(text, *module);
  if (!parser.run(error))
    return nullptr;
  if (module->kernels.empty()) {
    error = "the module has no kernel (.entry)";
    return nullptr;
  }
  return module;
}

//===----------------------------------------------------------------------===//
// Fatbinaries
//===----------------------------------------------------------------------===//

// The container (CUDA's fatbinary.h; LLVM's offload tools read it too): a
// header {u32 magic 0xBA55ED50, u16 version, u16 header size, u64 payload
// size}, then entries {u16 kind (1 PTX, 2 ELF), u16, u32 header size, u64
// payload size, u32 data size, u32, u32 version, u32 arch, ..., u64 flags
// at 40, ..., u64 uncompressed size at 56}, each followed by its payload.
// CUDA 13's fatbinary compresses PTX with zstd (a zstd frame starts the
// payload); uncompressed PTX is text.
std::string tprt::emu::ptxOfFatbin(const void *image, std::string &error) {
  const uint8_t *p = static_cast<const uint8_t *>(image);
  auto u16 = [](const uint8_t *q) { uint16_t v; std::memcpy(&v, q, 2); return v; };
  auto u32 = [](const uint8_t *q) { uint32_t v; std::memcpy(&v, q, 4); return v; };
  auto u64 = [](const uint8_t *q) { uint64_t v; std::memcpy(&v, q, 8); return v; };
  if (u32(p) != 0xBA55ED50u) {
    error = "not a fatbinary";
    return "";
  }
  uint16_t headerSize = u16(p + 6);
  uint64_t payload = u64(p + 8);
  const uint8_t *entry = p + headerSize;
  const uint8_t *end = entry + payload;
  std::string problem = "the fatbinary carries no PTX, only machine code "
                        "(build with --gpu-format isa or fatbin)";
  while (entry + 64 <= end) {
    uint16_t kind = u16(entry);
    uint32_t entryHeader = u32(entry + 4);
    uint64_t size = u64(entry + 8);
    const uint8_t *data = entry + entryHeader;
    if (kind == 1 && size >= 4) {
      if (u32(data) == 0xFD2FB528u) { // a zstd frame
#ifdef TPRT_EMU_HAVE_ZSTD
        size_t frame = ZSTD_findFrameCompressedSize(data, size_t(size));
        unsigned long long bytes = ZSTD_getFrameContentSize(data, size_t(size));
        if (ZSTD_isError(frame) || bytes == ZSTD_CONTENTSIZE_ERROR ||
            bytes == ZSTD_CONTENTSIZE_UNKNOWN || bytes > (1ull << 31)) {
          problem = "the fatbinary's zstd-compressed PTX is malformed";
        } else {
          std::string text(size_t(bytes), '\0');
          size_t got = ZSTD_decompress(text.data(), text.size(), data, frame);
          if (ZSTD_isError(got)) {
            problem = std::string("cannot decompress the fatbinary's PTX: ") +
                      ZSTD_getErrorName(got);
          } else {
            text.resize(got);
            size_t nul = text.find('\0');
            if (nul != std::string::npos)
              text.resize(nul);
            return text;
          }
        }
#else
        problem = "the fatbinary's PTX is zstd-compressed and the emulator "
                  "was built without libzstd (install libzstd-dev, or build "
                  "the model with --gpu-format isa)";
#endif
      } else if (u64(entry + 40) & 0x1000) {
        problem = "the fatbinary's PTX is compressed in a format the emulator "
                  "does not read (build the model with --gpu-format isa)";
      } else {
        std::string text(reinterpret_cast<const char *>(data), size_t(size));
        size_t nul = text.find('\0');
        if (nul != std::string::npos)
          text.resize(nul);
        return text;
      }
    }
    entry = data + size;
  }
  error = problem;
  return "";
}
