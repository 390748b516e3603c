// RUN: spmdc-opt %s --tg-print-sharding-rules | FileCheck %s
// RUN: spmdc-opt %s --tg-print-sharding-rules | spmdc-opt | FileCheck %s

// The sharding rule of every tg op, in Shardy's factor notation: operand
// dims and result dims as factors, factor sizes, the contracted factors
// (reduction), the factors that must stay whole (need_replication), and
// how partial sums pass (partial=all: every operand alike; linear={...}:
// the operands the result is linear in, one at a time). Composites keep
// everything whole: they are decomposed before the shard stage.

func.func @signature(%x: tensor<8x4xf32> {tg.name = "x", tg.role = #tg.role<data>},
                     %t: tensor<8xi64> {tg.name = "t", tg.role = #tg.role<data>, tg.index_bound = 2 : i64})
    -> (tensor<f32> {tg.name = "loss", tg.role = #tg.role<loss>}) {
  // CHECK: tg.sum {{.*}}#tg.sharding_rule<([i, j])->([]) {i=8, j=4} reduction={i, j} linear={0}>
  %s = tg.sum %x dims [0, 1] : tensor<8x4xf32>
  return %s : tensor<f32>
}


func.func @unary(%x: tensor<4xf32>, %i: tensor<4xi64>, %b: tensor<4xi1>) {
  // CHECK: tg.neg {{.*}}#tg.sharding_rule<([i])->([i]) {i=4} linear={0}>
  %0 = tg.neg %x : tensor<4xf32>
  // CHECK: tg.abs {{.*}}#tg.sharding_rule<([i])->([i]) {i=4}>
  %1 = tg.abs %i : tensor<4xi64>
  // CHECK: tg.exp {{.*}}#tg.sharding_rule<([i])->([i]) {i=4}>
  %2 = tg.exp %x : tensor<4xf32>
  // CHECK: tg.log {{.*}}#tg.sharding_rule<([i])->([i]) {i=4}>
  %3 = tg.log %x : tensor<4xf32>
  // CHECK: tg.sqrt {{.*}}#tg.sharding_rule<([i])->([i]) {i=4}>
  %4 = tg.sqrt %x : tensor<4xf32>
  // CHECK: tg.rsqrt {{.*}}#tg.sharding_rule<([i])->([i]) {i=4}>
  %5 = tg.rsqrt %x : tensor<4xf32>
  // CHECK: tg.reciprocal {{.*}}#tg.sharding_rule<([i])->([i]) {i=4}>
  %6 = tg.reciprocal %x : tensor<4xf32>
  // CHECK: tg.tanh {{.*}}#tg.sharding_rule<([i])->([i]) {i=4}>
  %7 = tg.tanh %x : tensor<4xf32>
  // CHECK: tg.erf {{.*}}#tg.sharding_rule<([i])->([i]) {i=4}>
  %8 = tg.erf %x : tensor<4xf32>
  // CHECK: tg.sigmoid {{.*}}#tg.sharding_rule<([i])->([i]) {i=4}>
  %9 = tg.sigmoid %x : tensor<4xf32>
  // CHECK: tg.sin {{.*}}#tg.sharding_rule<([i])->([i]) {i=4}>
  %10 = tg.sin %x : tensor<4xf32>
  // CHECK: tg.cos {{.*}}#tg.sharding_rule<([i])->([i]) {i=4}>
  %11 = tg.cos %x : tensor<4xf32>
  // CHECK: tg.relu {{.*}}#tg.sharding_rule<([i])->([i]) {i=4}>
  %12 = tg.relu %x : tensor<4xf32>
  // CHECK: tg.not {{.*}}#tg.sharding_rule<([i])->([i]) {i=4}>
  %13 = tg.not %b : tensor<4xi1>
  // CHECK: tg.silu {{.*}}#tg.sharding_rule<([i])->([i]) {i=4}>
  %14 = tg.silu %x : tensor<4xf32>
  // CHECK: tg.gelu {{.*}}#tg.sharding_rule<([i])->([i]) {i=4}>
  %15 = tg.gelu %x : tensor<4xf32>
  // CHECK: tg.gelu {{.*}}#tg.sharding_rule<([i])->([i]) {i=4}>
  %16 = tg.gelu %x approximate "tanh" : tensor<4xf32>
  return
}


func.func @binary(%a: tensor<2x3xbf16>, %b: tensor<3xbf16>, %p: tensor<2x1xi1>, %q: tensor<3xi1>) {
  // CHECK: tg.add {{.*}}#tg.sharding_rule<([i, j], [j])->([i, j]) {i=2, j=3} partial=all>
  %0 = tg.add %a, %b : tensor<2x3xbf16>, tensor<3xbf16>
  // CHECK: tg.sub {{.*}}#tg.sharding_rule<([i, j], [j])->([i, j]) {i=2, j=3} partial=all>
  %1 = tg.sub %a, %b : tensor<2x3xbf16>, tensor<3xbf16>
  // CHECK: tg.mul {{.*}}#tg.sharding_rule<([i, j], [j])->([i, j]) {i=2, j=3} linear={0, 1}>
  %2 = tg.mul %a, %b : tensor<2x3xbf16>, tensor<3xbf16>
  // CHECK: tg.div {{.*}}#tg.sharding_rule<([i, j], [j])->([i, j]) {i=2, j=3} linear={0}>
  %3 = tg.div %a, %b : tensor<2x3xbf16>, tensor<3xbf16>
  // CHECK: tg.pow {{.*}}#tg.sharding_rule<([i, j], [j])->([i, j]) {i=2, j=3}>
  %4 = tg.pow %a, %b : tensor<2x3xbf16>, tensor<3xbf16>
  // CHECK: tg.maximum {{.*}}#tg.sharding_rule<([i, j], [j])->([i, j]) {i=2, j=3}>
  %5 = tg.maximum %a, %b : tensor<2x3xbf16>, tensor<3xbf16>
  // CHECK: tg.minimum {{.*}}#tg.sharding_rule<([i, j], [j])->([i, j]) {i=2, j=3}>
  %6 = tg.minimum %a, %b : tensor<2x3xbf16>, tensor<3xbf16>
  // CHECK: tg.and {{.*}}#tg.sharding_rule<([i, 1], [j])->([i, j]) {i=2, j=3}>
  %7 = tg.and %p, %q : tensor<2x1xi1>, tensor<3xi1>
  // CHECK: tg.or {{.*}}#tg.sharding_rule<([i, 1], [j])->([i, j]) {i=2, j=3}>
  %8 = tg.or %p, %q : tensor<2x1xi1>, tensor<3xi1>
  // CHECK: tg.compare {{.*}}#tg.sharding_rule<([i, j], [j])->([i, j]) {i=2, j=3}>
  %9 = tg.compare ge, %a, %b : tensor<2x3xbf16>, tensor<3xbf16>
  // CHECK: tg.select {{.*}}#tg.sharding_rule<([i, 1], [i, j], [j])->([i, j]) {i=2, j=3}>
  %10 = tg.select %p, %a, %b : tensor<2x1xi1>, tensor<2x3xbf16>, tensor<3xbf16>
  // CHECK: tg.convert {{.*}}#tg.sharding_rule<([i, j])->([i, j]) {i=2, j=3} linear={0}>
  %11 = tg.convert %a : tensor<2x3xbf16> to tensor<2x3xf64>
  return
}


func.func @reductions_and_shapes(%x: tensor<2x3x4xf16>, %i: tensor<2x3xi32>) {
  // CHECK: tg.sum {{.*}}#tg.sharding_rule<([i, j, k])->([i, k]) {i=2, j=3, k=4} reduction={j} linear={0}>
  %0 = tg.sum %x dims [1] : tensor<2x3x4xf16>
  // CHECK: tg.max {{.*}}#tg.sharding_rule<([i, j, k])->([i, j, 1]) {i=2, j=3, k=4} reduction={k} combine=max>
  %1 = tg.max %x dims [-1] keepdim : tensor<2x3x4xf16>
  // CHECK: tg.mean {{.*}}#tg.sharding_rule<([i, j, k])->([j]) {i=2, j=3, k=4} reduction={i, k} linear={0}>
  %2 = tg.mean %x dims [0, 2] : tensor<2x3x4xf16>
  // CHECK: tg.full {{.*}}#tg.sharding_rule<()->([i, j]) {i=4, j=5} need_replication={i, j}>
  %w = tg.full 1.0 : tensor<4x5xf16>
  // CHECK: tg.matmul {{.*}}#tg.sharding_rule<([i, j, l], [l, k])->([i, j, k]) {i=2, j=3, k=5, l=4} reduction={l} linear={0, 1}>
  %3 = tg.matmul %x, %w : tensor<2x3x4xf16>, tensor<4x5xf16>
  // CHECK: tg.reshape {{.*}}#tg.sharding_rule<([i, j, k])->([ij, k]) {i=2, j=3, k=4} need_replication={j} linear={0}>
  %4 = tg.reshape %x : tensor<2x3x4xf16> to tensor<6x4xf16>
  // CHECK: tg.transpose {{.*}}#tg.sharding_rule<([i, j, k])->([k, i, j]) {i=2, j=3, k=4} linear={0}>
  %5 = tg.transpose %x perm [2, 0, 1] : tensor<2x3x4xf16>
  // CHECK: tg.broadcast {{.*}}#tg.sharding_rule<([j, k, l])->([i, j, k, l]) {i=5, j=2, k=3, l=4} linear={0}>
  %6 = tg.broadcast %x : tensor<2x3x4xf16> to tensor<5x2x3x4xf16>
  // CHECK: tg.slice {{.*}}#tg.sharding_rule<([i, j, k])->([i, j, l]) {i=2, j=3, k=4, l=2} reduction={k} need_replication={k, l} linear={0}>
  %7 = tg.slice %x dim 2 start 1 end 4 step 2 : tensor<2x3x4xf16>
  // A slice or concat of whole parts: the dim as [parts, part size], the
  // part size shared (splitting it puts the dim in parts).
  // CHECK: tg.slice {{.*}}#tg.sharding_rule<([i, j, lk])->([i, j, k]) {i=2, j=3, k=2, l=2} reduction={l} need_replication={l} linear={0}>
  %half = tg.slice %x dim 2 start 2 end 4 step 1 : tensor<2x3x4xf16>
  // CHECK: tg.concat {{.*}}#tg.sharding_rule<([j, k, mi], [j, k, i])->([j, k, li]) {i=2, j=2, k=3, l=3, m=2} reduction={m} need_replication={l, m} partial=all>
  %8 = tg.concat %x, %7 dim -1 : tensor<2x3x4xf16>, tensor<2x3x2xf16>
  // Otherwise the sliced or concatenated dim stays whole.
  // CHECK: tg.slice {{.*}}#tg.sharding_rule<([i, j, k])->([i, j, l]) {i=2, j=3, k=4, l=3} reduction={k} need_replication={k, l} linear={0}>
  %three = tg.slice %x dim 2 start 0 end 3 step 1 : tensor<2x3x4xf16>
  // CHECK: tg.concat {{.*}}#tg.sharding_rule<([i, j, l], [i, j, m])->([i, j, k]) {i=2, j=3, k=7, l=4, m=3} reduction={l, m} need_replication={k, l, m} partial=all>
  %odd = tg.concat %x, %three dim -1 : tensor<2x3x4xf16>, tensor<2x3x3xf16>
  // CHECK: tg.iota {{.*}}#tg.sharding_rule<()->([i, j, k]) {i=2, j=3, k=1} need_replication={i, j, k}>
  %idx = tg.iota dim 0 : tensor<2x3x1xi64>
  // CHECK: tg.gather {{.*}}#tg.sharding_rule<([i, j, k], [i, j, l])->([i, j, l]) {i=2, j=3, k=4, l=1} reduction={k} linear={0} indexed={k=1}>
  %9 = tg.gather %x, %idx dim 2 : tensor<2x3x4xf16>, tensor<2x3x1xi64>
  // CHECK: tg.scatter_add {{.*}}#tg.sharding_rule<([i, j, l], [i, j, l])->([i, j, k]) {i=2, j=3, k=4, l=1} reduction={l} linear={1} indexed={k=0}>
  %10 = tg.scatter_add %idx, %9 dim 2 : tensor<2x3x1xi64>, tensor<2x3x1xf16> to tensor<2x3x4xf16>
  // CHECK: tg.embedding {{.*}}#tg.sharding_rule<([i, j], [k, l])->([k, l, j]) {i=4, j=5, k=2, l=3} reduction={i} linear={0} indexed={i=1}>
  %11 = tg.embedding %w, %i : tensor<4x5xf16>, tensor<2x3xi32>
  // CHECK: tg.embedding_backward {{.*}}#tg.sharding_rule<([k, l, j], [k, l])->([i, j]) {i=4, j=5, k=2, l=3} reduction={k, l} linear={0} indexed={i=1}>
  %12 = tg.embedding_backward %11, %i : tensor<2x3x5xf16>, tensor<2x3xi32> to tensor<4x5xf16>
  // CHECK: tg.constant {{.*}}#tg.sharding_rule<()->([i]) {i=2} need_replication={i}>
  %13 = tg.constant dense<[true, false]> : tensor<2xi1>
  // CHECK: tg.rand_uniform {{.*}}#tg.sharding_rule<()->([i, j]) {i=3, j=3} need_replication={i, j}>
  %14 = tg.rand_uniform seed 7 : tensor<3x3xf32>
  return
}


func.func @composites(%x: tensor<2x8x16xf32>, %w: tensor<32x16xf32>, %b: tensor<32xf32>,
                      %g: tensor<16xf32>, %q: tensor<2x4x8x16xf32>, %kv: tensor<2x2x8x16xf32>,
                      %labels: tensor<2x8xi64>) {
  // CHECK: tg.linear {{.*}}#tg.sharding_rule<([i, j, k], [l, m], [n])->([o, p, q]) {i=2, j=8, k=16, l=32, m=16, n=32, o=2, p=8, q=32} reduction={i, j, k, l, m, n} need_replication={i, j, k, l, m, n, o, p, q}>
  %0 = tg.linear %x, %w, %b : tensor<2x8x16xf32>, tensor<32x16xf32>, tensor<32xf32>
  // CHECK: tg.linear {{.*}}#tg.sharding_rule<([i, j, k], [l, m])->([n, o, p]) {i=2, j=8, k=16, l=32, m=16, n=2, o=8, p=32} reduction={i, j, k, l, m} need_replication={i, j, k, l, m, n, o, p}>
  %1 = tg.linear %x, %w : tensor<2x8x16xf32>, tensor<32x16xf32>
  // CHECK: tg.softmax {{.*}}#tg.sharding_rule<([i, j, k])->([l, m, n]) {i=2, j=8, k=32, l=2, m=8, n=32} reduction={i, j, k} need_replication={i, j, k, l, m, n}>
  %2 = tg.softmax %0 dim -1 : tensor<2x8x32xf32>
  // CHECK: tg.log_softmax {{.*}}#tg.sharding_rule<([i, j, k])->([l, m, n]) {i=2, j=8, k=32, l=2, m=8, n=32} reduction={i, j, k} need_replication={i, j, k, l, m, n}>
  %3 = tg.log_softmax %0 dim 2 : tensor<2x8x32xf32>
  // CHECK: tg.layer_norm {{.*}}#tg.sharding_rule<([i, j, k], [l], [m])->([n, o, p]) {i=2, j=8, k=16, l=16, m=16, n=2, o=8, p=16} reduction={i, j, k, l, m} need_replication={i, j, k, l, m, n, o, p}>
  %4 = tg.layer_norm %x, %g, %g eps 1.0e-5 : tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>
  // CHECK: tg.rms_norm {{.*}}#tg.sharding_rule<([i, j, k], [l])->([m, n, o]) {i=2, j=8, k=16, l=16, m=2, n=8, o=16} reduction={i, j, k, l} need_replication={i, j, k, l, m, n, o}>
  %5 = tg.rms_norm %x, %g eps 1.0e-6 : tensor<2x8x16xf32>, tensor<16xf32>
  // CHECK: tg.cross_entropy {{.*}}#tg.sharding_rule<([i, j, k], [l, m])->([]) {i=2, j=8, k=32, l=2, m=8} reduction={i, j, k, l, m} need_replication={i, j, k, l, m}>
  %6 = tg.cross_entropy %0, %labels : tensor<2x8x32xf32>, tensor<2x8xi64>
  // CHECK: tg.sdpa {{.*}}#tg.sharding_rule<([i, j, k, l], [m, n, o, p], [q, r, s, t])->([u, v, w, x]) {i=2, j=4, k=8, l=16, m=2, n=2, o=8, p=16, q=2, r=2, s=8, t=16, u=2, v=4, w=8, x=16} reduction={i, j, k, l, m, n, o, p, q, r, s, t} need_replication={i, j, k, l, m, n, o, p, q, r, s, t, u, v, w, x}>
  %7 = tg.sdpa %q, %kv, %kv causal : tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>
  // CHECK: tg.sdpa {{.*}}#tg.sharding_rule<([i, j, k, l], [m, n, o, p], [q, r, s, t])->([u, v, w, x]) {i=2, j=4, k=8, l=16, m=2, n=2, o=8, p=16, q=2, r=2, s=8, t=16, u=2, v=4, w=8, x=16} reduction={i, j, k, l, m, n, o, p, q, r, s, t} need_replication={i, j, k, l, m, n, o, p, q, r, s, t, u, v, w, x}>
  %8 = tg.sdpa %q, %kv, %kv scale 0.25 : tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>
  // CHECK: tg.dropout {{.*}}#tg.sharding_rule<([i, j, k])->([l, m, n]) {i=2, j=8, k=16, l=2, m=8, n=16} reduction={i, j, k} need_replication={i, j, k, l, m, n}>
  %9 = tg.dropout %x p 0.1 seed 3 : tensor<2x8x16xf32>
  return
}

