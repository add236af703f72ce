//===- GPUCostModel.cpp - modelled seconds of GPU kernels and calls -------===//
//
// See GPUCostModel.h for the model. The counter walks a kernel's body once
// per evaluation environment (thread 0 of the first block, thread 0 of the
// last block), multiplying each op's cost by the trip counts of the loops
// around it; loop bounds are evaluated from constants, thread and block
// ids, launch sizes and the induction variables of enclosing loops (at
// their first iteration). The two counts are averaged and multiplied by the
// number of threads.
//
//===----------------------------------------------------------------------===//

#include "GPUCostModel.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/TypeSwitch.h"

#include <algorithm>
#include <cmath>

using namespace mlir;
using namespace mlir::tp;
using namespace mlir::tp::gpucost;

namespace {

/// What one execution of an op costs one thread.
struct OpCost {
  double issue = 0, sfu = 0, flops32 = 0, flops64 = 0, tensor = 0;
};

/// Elements of a scalar or vector type (vector arithmetic is one op per
/// element).
int64_t lanes(Type type) {
  if (auto v = dyn_cast<VectorType>(type))
    return v.getNumElements();
  return 1;
}

Type scalarType(Type type) {
  if (auto v = dyn_cast<VectorType>(type))
    return v.getElementType();
  return type;
}

bool isWide(Type type) {
  type = scalarType(type);
  return type.isIndex() || type.getIntOrFloatBitWidth() > 32;
}

/// Float arithmetic: `issue` slots, `flops` per element, `sfu` results.
OpCost floatOp(Type type, double issue, double flops, double sfu = 0) {
  int64_t n = lanes(type);
  OpCost c;
  c.issue = issue * n;
  c.sfu = sfu * n;
  if (isWide(type))
    c.flops64 = flops * n;
  else
    c.flops32 = flops * n;
  return c;
}

/// Integer arithmetic: 64-bit (index) ops take `wide` slots.
OpCost intOp(Type type, double narrow, double wide) {
  OpCost c;
  c.issue = (isWide(type) ? wide : narrow) * lanes(type);
  return c;
}

/// Whether `v` is a constant power of two.
bool isPowerOfTwo(Value v) {
  APInt c;
  return matchPattern(v, m_ConstantInt(&c)) && c.isPowerOf2();
}

/// The issue cost of a division or remainder: by a power of two (a shift
/// or a mask), by another constant (a multiply-high sequence) or by a
/// value (a software loop).
OpCost intDivision(Operation *op) {
  Value divisor = op->getOperand(1);
  Type type = op->getResult(0).getType();
  if (isPowerOfTwo(divisor))
    return intOp(type, 1, 1);
  if (matchPattern(divisor, m_Constant()))
    return intOp(type, 4, 6);
  return intOp(type, 20, 40);
}

/// 64-bit additions and compares with a constant operand fold into the
/// addressing or take one instruction; others take two.
OpCost wideIntOp(Operation *op) {
  Type type = op->getResult(0).getType();
  bool constant = llvm::any_of(op->getOperands(), [](Value v) {
    return matchPattern(v, m_Constant());
  });
  return intOp(type, 1, constant ? 1 : 2);
}

OpCost costOf(Operation *op) {
  OpCost none;
  if (op->hasTrait<OpTrait::ConstantLike>() ||
      isa<ViewLikeOpInterface, memref::CastOp, scf::YieldOp,
          gpu::TerminatorOp, gpu::ReturnOp, gpu::YieldOp>(op))
    return none;
  // Register moves the backend folds away.
  if (isa<vector::ExtractOp, vector::InsertOp, vector::FromElementsOp,
          vector::BroadcastOp, vector::ShapeCastOp, vector::BitCastOp,
          arith::BitcastOp, LLVM::ExtractValueOp, LLVM::InsertValueOp,
          LLVM::UndefOp, LLVM::PoisonOp>(op))
    return none;
  Type type = op->getNumResults() ? op->getResult(0).getType() : Type();
  return llvm::TypeSwitch<Operation *, OpCost>(op)
      // Float arithmetic.
      .Case<arith::AddFOp, arith::SubFOp, arith::MulFOp>(
          [&](auto) { return floatOp(type, 1, 1); })
      .Case<math::FmaOp>([&](auto) { return floatOp(type, 1, 2); })
      .Case<arith::NegFOp, arith::MaximumFOp, arith::MinimumFOp,
            arith::MaxNumFOp, arith::MinNumFOp, math::AbsFOp,
            math::CopySignOp, math::FloorOp, math::CeilOp, math::RoundOp,
            math::TruncOp>([&](auto) { return floatOp(type, 1, 0); })
      .Case<arith::CmpFOp>([&](arith::CmpFOp cmp) {
        return floatOp(cmp.getLhs().getType(), 1, 0);
      })
      .Case<arith::DivFOp>([&](auto) {
        return isWide(type) ? floatOp(type, 20, 1, 1) : floatOp(type, 8, 1, 1);
      })
      .Case<arith::RemFOp>([&](auto) { return floatOp(type, 20, 2); })
      // Accurate libdevice math (what math.* lowers to): instructions per
      // call and MUFU results, read off __nv_* in libdevice.10.bc.
      .Case<math::ExpOp>([&](auto) {
        return isWide(type) ? floatOp(type, 30, 20) : floatOp(type, 4, 2, 1);
      })
      .Case<math::Exp2Op>([&](auto) {
        return isWide(type) ? floatOp(type, 30, 20) : floatOp(type, 1, 0, 1);
      })
      .Case<math::ExpM1Op>([&](auto) { return floatOp(type, 12, 8, 1); })
      .Case<math::LogOp, math::Log2Op, math::Log10Op, math::Log1pOp>(
          [&](auto) {
            return isWide(type) ? floatOp(type, 30, 20)
                                : floatOp(type, 8, 5, 1);
          })
      .Case<math::RsqrtOp>([&](auto) {
        return isWide(type) ? floatOp(type, 20, 10, 1) : floatOp(type, 2, 1, 1);
      })
      .Case<math::SqrtOp>([&](auto) {
        return isWide(type) ? floatOp(type, 20, 10, 1) : floatOp(type, 6, 3, 1);
      })
      .Case<math::TanhOp>([&](auto) { return floatOp(type, 12, 8, 1); })
      .Case<math::ErfOp>([&](auto) { return floatOp(type, 20, 14, 1); })
      .Case<math::SinOp, math::CosOp>(
          [&](auto) { return floatOp(type, 25, 18); })
      .Case<math::PowFOp>([&](auto) { return floatOp(type, 60, 40, 2); })
      .Case<math::FPowIOp, math::IPowIOp>(
          [&](auto) { return floatOp(type, 20, 10); })
      // Conversions.
      .Case<arith::ExtFOp, arith::TruncFOp, arith::SIToFPOp, arith::UIToFPOp,
            arith::FPToSIOp, arith::FPToUIOp, arith::IndexCastOp,
            arith::IndexCastUIOp, arith::ExtSIOp, arith::ExtUIOp,
            arith::TruncIOp>([&](auto) {
        OpCost c;
        c.issue = lanes(type);
        return c;
      })
      // Integer arithmetic.
      .Case<arith::MulIOp>([&](arith::MulIOp mul) {
        if (isPowerOfTwo(mul.getLhs()) || isPowerOfTwo(mul.getRhs()))
          return intOp(type, 1, 1); // a shift
        return intOp(type, 1, 2);
      })
      .Case<arith::DivUIOp, arith::DivSIOp, arith::RemUIOp, arith::RemSIOp,
            arith::FloorDivSIOp, arith::CeilDivSIOp, arith::CeilDivUIOp>(
          [&](Operation *o) { return intDivision(o); })
      .Case<arith::CmpIOp>([&](arith::CmpIOp cmp) {
        OpCost c = wideIntOp(cmp);
        c.issue = isWide(cmp.getLhs().getType()) ? c.issue : 1;
        return c;
      })
      .Case<arith::SelectOp>([&](auto) {
        return isa<FloatType>(scalarType(type)) ? floatOp(type, 1, 0)
                                                : wideIntOp(op);
      })
      .Case<arith::AddIOp, arith::SubIOp, arith::AndIOp, arith::OrIOp,
            arith::XOrIOp, arith::ShLIOp, arith::ShRUIOp, arith::ShRSIOp,
            arith::MaxSIOp, arith::MinSIOp, arith::MaxUIOp, arith::MinUIOp>(
          [&](Operation *o) { return wideIntOp(o); })
      // Memory: one slot per access (its bytes are priced separately).
      .Case<memref::LoadOp, memref::StoreOp, vector::LoadOp, vector::StoreOp,
            nvgpu::LdMatrixOp, nvgpu::DeviceAsyncCopyOp,
            nvgpu::DeviceAsyncCreateGroupOp, nvgpu::DeviceAsyncWaitOp>(
          [&](auto) {
            OpCost c;
            c.issue = 1;
            return c;
          })
      .Case<memref::AtomicRMWOp>([&](auto) {
        OpCost c;
        c.issue = 2;
        return c;
      })
      .Case<memref::GenericAtomicRMWOp>([&](auto) {
        OpCost c;
        c.issue = 10; // a compare-and-swap loop
        return c;
      })
      // Warp and block collectives.
      .Case<gpu::ShuffleOp, gpu::BarrierOp, gpu::ThreadIdOp, gpu::BlockIdOp,
            gpu::BlockDimOp, gpu::GridDimOp, gpu::LaneIdOp>([&](auto) {
        OpCost c;
        c.issue = 1;
        return c;
      })
      .Case<gpu::AllReduceOp>([&](auto) {
        // Five shuffle-and-combine steps per warp, the warps' partials
        // through workgroup memory and a barrier, five more steps.
        OpCost c;
        c.issue = 25;
        return c;
      })
      // Tensor cores: one warp-wide m x n x k product per op.
      .Case<NVVM::MmaOp>([&](NVVM::MmaOp mma) {
        OpCost c;
        c.issue = 1;
        NVVM::MMAShapeAttr shape = mma.getShape();
        c.tensor = 2.0 * shape.getM() * shape.getN() * shape.getK() / 32.0;
        return c;
      })
      .Case<nvgpu::MmaSyncOp>([&](nvgpu::MmaSyncOp mma) {
        OpCost c;
        c.issue = 1;
        std::array<int64_t, 3> s = mma.getMmaShapeAsArray();
        c.tensor = 2.0 * s[0] * s[1] * s[2] / 32.0;
        return c;
      })
      .Default([&](Operation *o) {
        OpCost c;
        c.issue = o->getNumRegions() ? 0 : 1;
        return c;
      });
}

/// Known integer values: ids, sizes, loop induction variables.
class Counter {
public:
  Counter(KernelWork &work) : work(work) {}

  DenseMap<Value, int64_t> env;
  /// Thread id values and the last thread's id along their dimension.
  SmallVector<std::pair<Value, int64_t>> threadIds;

  std::optional<int64_t> eval(Value v, int depth = 0) {
    if (auto it = env.find(v); it != env.end())
      return it->second;
    if (depth > 64)
      return std::nullopt;
    APInt constant;
    if (matchPattern(v, m_ConstantInt(&constant)))
      return constant.getSExtValue();
    Operation *op = v.getDefiningOp();
    if (!op)
      return std::nullopt;
    auto operand = [&](unsigned i) { return eval(op->getOperand(i), depth + 1); };
    auto binary = [&](auto f) -> std::optional<int64_t> {
      std::optional<int64_t> a = operand(0), b = operand(1);
      if (!a || !b)
        return std::nullopt;
      return f(*a, *b);
    };
    return llvm::TypeSwitch<Operation *, std::optional<int64_t>>(op)
        .Case<arith::IndexCastOp, arith::IndexCastUIOp, arith::ExtSIOp,
              arith::ExtUIOp, arith::TruncIOp>(
            [&](auto) { return operand(0); })
        .Case<arith::AddIOp>([&](auto) {
          return binary([](int64_t a, int64_t b) { return a + b; });
        })
        .Case<arith::SubIOp>([&](auto) {
          return binary([](int64_t a, int64_t b) { return a - b; });
        })
        .Case<arith::MulIOp>([&](auto) {
          return binary([](int64_t a, int64_t b) { return a * b; });
        })
        .Case<arith::DivUIOp, arith::DivSIOp, arith::FloorDivSIOp>([&](auto) {
          return binary([](int64_t a, int64_t b) -> int64_t {
            return b ? llvm::divideFloorSigned(a, b) : 0;
          });
        })
        .Case<arith::CeilDivSIOp, arith::CeilDivUIOp>([&](auto) {
          return binary([](int64_t a, int64_t b) -> int64_t {
            return b ? llvm::divideCeilSigned(a, b) : 0;
          });
        })
        .Case<arith::RemUIOp, arith::RemSIOp>([&](auto) {
          return binary(
              [](int64_t a, int64_t b) -> int64_t { return b ? a % b : 0; });
        })
        .Case<arith::MinSIOp, arith::MinUIOp>([&](auto) {
          return binary([](int64_t a, int64_t b) { return std::min(a, b); });
        })
        .Case<arith::MaxSIOp, arith::MaxUIOp>([&](auto) {
          return binary([](int64_t a, int64_t b) { return std::max(a, b); });
        })
        .Case<arith::SelectOp>([&](auto) -> std::optional<int64_t> {
          std::optional<int64_t> c = operand(0);
          if (!c)
            return std::nullopt;
          return operand(*c ? 1 : 2);
        })
        .Case<gpu::AllReduceOp>([&](gpu::AllReduceOp r) -> std::optional<int64_t> {
          // A block's min or max of a value that grows with the thread id:
          // the value at the first or the last thread.
          std::optional<gpu::AllReduceOperation> kind = r.getOp();
          if (!kind)
            return std::nullopt;
          bool max = *kind == gpu::AllReduceOperation::MAXSI ||
                     *kind == gpu::AllReduceOperation::MAXUI;
          bool min = *kind == gpu::AllReduceOperation::MINSI ||
                     *kind == gpu::AllReduceOperation::MINUI;
          if (!max && !min)
            return std::nullopt;
          SmallVector<std::pair<Value, int64_t>> saved;
          for (auto [id, last] : threadIds)
            saved.push_back({id, env[id]});
          for (auto [id, last] : threadIds)
            env[id] = max ? last : 0;
          std::optional<int64_t> v = eval(r.getValue(), depth + 1);
          for (auto [id, value] : saved)
            env[id] = value;
          return v;
        })
        .Case<arith::CmpIOp>([&](arith::CmpIOp cmp) -> std::optional<int64_t> {
          std::optional<int64_t> a = operand(0), b = operand(1);
          if (!a || !b)
            return std::nullopt;
          return arith::applyCmpPredicate(cmp.getPredicate(),
                                          APInt(64, *a, true),
                                          APInt(64, *b, true));
        })
        .Default([](Operation *) { return std::nullopt; });
  }

  /// Adds what `block` costs one thread, `times` times.
  void count(Block &block, double times) {
    for (Operation &op : block) {
      if (auto loop = dyn_cast<scf::ForOp>(op)) {
        std::optional<int64_t> lb = eval(loop.getLowerBound()),
                               ub = eval(loop.getUpperBound()),
                               step = eval(loop.getStep());
        double trips = 1;
        if (lb && ub && step && *step > 0) {
          trips = *ub > *lb ? double(llvm::divideCeil(*ub - *lb, *step)) : 0;
          env[loop.getInductionVar()] = *lb;
        } else {
          ++work.unknownLoops;
        }
        add(costOf(&op), times);
        count(*loop.getBody(), times * trips);
        continue;
      }
      if (auto branch = dyn_cast<scf::IfOp>(op)) {
        std::optional<int64_t> cond = eval(branch.getCondition());
        add(costOf(&op), times);
        if (cond) {
          Region &taken = *cond ? branch.getThenRegion() : branch.getElseRegion();
          if (!taken.empty())
            count(taken.front(), times);
          continue;
        }
        // Unknown: the costlier side.
        KernelWork thenWork, elseWork;
        Counter thenCounter(thenWork), elseCounter(elseWork);
        thenCounter.env = env;
        thenCounter.threadIds = threadIds;
        elseCounter.threadIds = threadIds;
        elseCounter.env = env;
        thenCounter.count(branch.getThenRegion().front(), times);
        if (!branch.getElseRegion().empty())
          elseCounter.count(branch.getElseRegion().front(), times);
        const KernelWork &larger =
            thenWork.issue >= elseWork.issue ? thenWork : elseWork;
        work.issue += larger.issue;
        work.sfu += larger.sfu;
        work.flops32 += larger.flops32;
        work.flops64 += larger.flops64;
        work.tensorFlops += larger.tensorFlops;
        work.unknownLoops += larger.unknownLoops;
        continue;
      }
      if (isa<scf::WhileOp>(op))
        ++work.unknownLoops;
      add(costOf(&op), times);
      for (Region &region : op.getRegions())
        for (Block &inner : region)
          count(inner, times);
    }
  }

private:
  void add(const OpCost &c, double times) {
    work.issue += c.issue * times;
    work.sfu += c.sfu * times;
    work.flops32 += c.flops32 * times;
    work.flops64 += c.flops64 * times;
    work.tensorFlops += c.tensor * times;
  }
  KernelWork &work;
};

/// Binds the ids and sizes of `body` (a gpu.launch's region or a
/// gpu.func's body) for thread 0 of block `blockIds`.
void bind(Counter &counter, Region &body, ArrayRef<int64_t> grid,
          ArrayRef<int64_t> block, ArrayRef<int64_t> blockIds) {
  if (auto launch = dyn_cast<gpu::LaunchOp>(body.getParentOp())) {
    gpu::KernelDim3 bids = launch.getBlockIds(), tids = launch.getThreadIds();
    gpu::KernelDim3 gsz = launch.getGridSize(), bsz = launch.getBlockSize();
    Value b[3] = {bids.x, bids.y, bids.z}, t[3] = {tids.x, tids.y, tids.z};
    Value g[3] = {gsz.x, gsz.y, gsz.z}, s[3] = {bsz.x, bsz.y, bsz.z};
    for (int i = 0; i < 3; ++i) {
      counter.env[b[i]] = blockIds[i];
      counter.env[t[i]] = 0;
      counter.threadIds.push_back({t[i], block[i] - 1});
      counter.env[g[i]] = grid[i];
      counter.env[s[i]] = block[i];
    }
  }
  body.walk([&](Operation *op) {
    auto dimOf = [](gpu::Dimension d) { return unsigned(d); };
    if (auto id = dyn_cast<gpu::BlockIdOp>(op))
      counter.env[id] = blockIds[dimOf(id.getDimension())];
    else if (auto id = dyn_cast<gpu::ThreadIdOp>(op)) {
      counter.env[id] = 0;
      counter.threadIds.push_back({id, block[dimOf(id.getDimension())] - 1});
    }
    else if (auto d = dyn_cast<gpu::GridDimOp>(op))
      counter.env[d] = grid[dimOf(d.getDimension())];
    else if (auto d = dyn_cast<gpu::BlockDimOp>(op))
      counter.env[d] = block[dimOf(d.getDimension())];
  });
}

} // namespace

KernelWork gpucost::countKernel(Region &body, ArrayRef<int64_t> grid,
                                ArrayRef<int64_t> block) {
  KernelWork total;
  if (body.empty())
    return total;
  SmallVector<int64_t, 3> first = {0, 0, 0}, last;
  for (int64_t g : grid)
    last.push_back(std::max<int64_t>(0, g - 1));
  // Thread 0 of the first block and of the last, averaged.
  KernelWork a, b;
  {
    Counter counter(a);
    bind(counter, body, grid, block, first);
    counter.count(body.front(), 1);
  }
  {
    Counter counter(b);
    bind(counter, body, grid, block, last);
    counter.count(body.front(), 1);
  }
  double threads = 1;
  for (int64_t n : grid)
    threads *= double(n);
  for (int64_t n : block)
    threads *= double(n);
  total.threads = threads;
  total.issue = (a.issue + b.issue) / 2 * threads;
  total.sfu = (a.sfu + b.sfu) / 2 * threads;
  total.flops32 = (a.flops32 + b.flops32) / 2 * threads;
  total.flops64 = (a.flops64 + b.flops64) / 2 * threads;
  total.tensorFlops = (a.tensorFlops + b.tensorFlops) / 2 * threads;
  total.unknownLoops = std::max(a.unknownLoops, b.unknownLoops);
  return total;
}

KernelWork gpucost::countLaunch(gpu::LaunchOp launch) {
  auto sizes = [](gpu::KernelDim3 d) {
    SmallVector<int64_t, 3> out;
    for (Value v : {d.x, d.y, d.z}) {
      APInt c;
      out.push_back(matchPattern(v, m_ConstantInt(&c)) ? c.getSExtValue() : 1);
    }
    return out;
  };
  return countKernel(launch.getBody(),
                     sizes(launch.getGridSizeOperandValues()),
                     sizes(launch.getBlockSizeOperandValues()));
}

static double achievableBandwidth(const DeviceProfile &d) {
  return d.memoryBandwidth * d.gpu.memoryEfficiency;
}

Time gpucost::kernelTime(const KernelWork &w, const DeviceProfile &d) {
  const DeviceProfile::GPUExecution &g = d.gpu;
  Time t;
  t.memory = w.bytes / achievableBandwidth(d);
  t.tensor = w.tensorFlops / (d.flops16 * g.mmaSyncFraction);
  // Issue slots are counted per thread; a warp issues 32 threads' at once.
  double issueRate = double(g.sms) * g.issuePerCycle * g.clock * 32;
  double sfuRate = double(g.sms) * g.sfuLanes * g.clock;
  t.issue = w.issue / issueRate;
  double fp32 = w.flops32 / d.flops32, fp64 = w.flops64 / g.flops64;
  t.fp = std::max(fp32, fp64);
  t.sfu = w.sfu / sfuRate;
  double alu = std::max(t.issue, t.fp);
  t.compute = t.tensor + alu + t.sfu;
  t.seconds = g.launch + std::max(t.memory, t.compute);
  if (t.memory >= t.compute)
    t.bound = "memory";
  else if (t.tensor >= alu && t.tensor >= t.sfu)
    t.bound = "tensor";
  else if (t.sfu > alu)
    t.bound = "sfu";
  else if (t.fp > t.issue)
    t.bound = fp64 > fp32 ? "fp64" : "fp32";
  else
    t.bound = "issue";
  return t;
}

Time gpucost::gemmTime(int64_t batch, int64_t m, int64_t n, int64_t k,
                       bool sixteenBit, double bytes,
                       const DeviceProfile &d) {
  const DeviceProfile::GPUExecution &g = d.gpu;
  Time t;
  double flops = 2.0 * double(batch) * m * n * k;
  double peak = (sixteenBit ? d.flops16 : d.flops32) * g.gemmEfficiency;
  // Wave quantisation: output tiles run in waves of one per SM.
  double tiles = double(batch) * llvm::divideCeil(m, g.gemmTile) *
                 llvm::divideCeil(n, g.gemmTile);
  double waves = std::ceil(tiles / g.sms);
  double stretch = tiles > 0 ? waves * g.sms / tiles : 1;
  t.tensor = flops / peak * stretch;
  t.memory = bytes / achievableBandwidth(d);
  t.compute = t.tensor;
  t.seconds = g.launch + std::max(t.memory, t.compute);
  t.bound = t.memory >= t.compute ? "memory" : "tensor";
  return t;
}

Time gpucost::libraryAttentionTime(double flops, double bytes,
                                   const DeviceProfile &d) {
  Time t;
  t.tensor = flops / (d.flops16 * d.gpu.attentionEfficiency);
  t.memory = bytes / achievableBandwidth(d);
  t.compute = t.tensor;
  t.seconds = d.gpu.launch + std::max(t.memory, t.compute);
  t.bound = t.memory >= t.compute ? "memory" : "tensor";
  return t;
}

Time gpucost::copyTime(double bytes, const DeviceProfile &d) {
  Time t;
  t.memory = bytes / achievableBandwidth(d);
  t.seconds = d.gpu.launch + t.memory;
  return t;
}

FailureOr<DeviceProfile> gpucost::lookupDevice(StringRef name,
                                               std::string &error) {
  if (std::optional<DeviceProfile> p = DeviceProfile::lookup(name))
    return *p;
  error = ("unknown device profile '" + name + "'; known: " +
           llvm::join(DeviceProfile::names(), ", "))
              .str();
  return failure();
}
