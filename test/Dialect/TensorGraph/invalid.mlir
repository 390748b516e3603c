// RUN: spmdc-opt %s -split-input-file -verify-diagnostics

func.func @bad_broadcast(%a: tensor<2x3xf32>, %b: tensor<4xf32>) {
  // expected-error@+1 {{shapes [2, 3] and [4] do not broadcast}}
  %0 = tg.add %a, %b : tensor<2x3xf32>, tensor<4xf32>
  return
}

// -----

func.func @element_mismatch(%a: tensor<2xf32>, %b: tensor<2xf64>) {
  // expected-error@+1 {{operand element types differ: 'f32' vs 'f64'}}
  %0 = tg.mul %a, %b : tensor<2xf32>, tensor<2xf64>
  return
}

// -----

func.func @written_type_mismatch(%a: tensor<2xf32>) {
  // expected-error@+2 {{'tg.add' op inferred type(s) 'tensor<2xf32>' are incompatible with return type(s) of operation 'tensor<3xf32>'}}
  // expected-error@+1 {{'tg.add' op failed to infer returned types}}
  %0 = "tg.add"(%a, %a) : (tensor<2xf32>, tensor<2xf32>) -> tensor<3xf32>
  return
}

// -----

func.func @float_only(%a: tensor<2xi64>) {
  // expected-error@+1 {{'tg.exp' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values}}
  %0 = tg.exp %a : tensor<2xi64>
  return
}

// -----

func.func @matmul_k(%a: tensor<2x3xf32>, %b: tensor<4x5xf32>) {
  // expected-error@+1 {{matmul contracting dims differ: lhs [2, 3] rhs [4, 5]}}
  %0 = tg.matmul %a, %b : tensor<2x3xf32>, tensor<4x5xf32>
  return
}

// -----

func.func @reshape_count(%a: tensor<2x3xf32>) {
  // expected-error@+1 {{from [2, 3] to [7] changes the element count}}
  %0 = tg.reshape %a : tensor<2x3xf32> to tensor<7xf32>
  return
}

// -----

func.func @broadcast_bad(%a: tensor<2x3xf32>) {
  // expected-error@+1 {{cannot broadcast [2, 3] to [2, 4]}}
  %0 = tg.broadcast %a : tensor<2x3xf32> to tensor<2x4xf32>
  return
}

// -----

func.func @transpose_bad(%a: tensor<2x3xf32>) {
  // expected-error@+1 {{permutation [0, 0] is not a permutation of 0..1}}
  %0 = tg.transpose %a perm [0, 0] : tensor<2x3xf32>
  return
}

// -----

func.func @slice_bad(%a: tensor<2x3xf32>) {
  // expected-error@+1 {{slice [0:4:1] is invalid for a dim of size 3}}
  %0 = tg.slice %a dim 1 start 0 end 4 step 1 : tensor<2x3xf32>
  return
}

// -----

func.func @reduce_dim(%a: tensor<2x3xf32>) {
  // expected-error@+1 {{reduction dim 2 is out of range for rank 2}}
  %0 = tg.sum %a dims [2] : tensor<2x3xf32>
  return
}

// -----

func.func @reduce_repeat(%a: tensor<2x3xf32>) {
  // expected-error@+1 {{reduction dim -1 is repeated}}
  %0 = tg.sum %a dims [1, -1] : tensor<2x3xf32>
  return
}

// -----

func.func @concat_bad(%a: tensor<2x3xf32>, %b: tensor<3x3xf32>) {
  // expected-error@+1 {{concat inputs differ in dim 0: [2, 3] vs [3, 3]}}
  %0 = tg.concat %a, %b dim 1 : tensor<2x3xf32>, tensor<3x3xf32>
  return
}

// -----

func.func @embedding_rank(%w: tensor<4xf32>, %i: tensor<2xi64>) {
  // expected-error@+1 {{embedding weight must be [V, D], got [4]}}
  %0 = tg.embedding %w, %i : tensor<4xf32>, tensor<2xi64>
  return
}

// -----

func.func @embedding_float_index(%w: tensor<4x2xf32>, %i: tensor<2xf32>) {
  // expected-error@+1 {{operand #1 must be statically shaped tensor of 64-bit signless integer or 32-bit signless integer values}}
  %0 = tg.embedding %w, %i : tensor<4x2xf32>, tensor<2xf32>
  return
}

// -----

func.func @gather_rank(%x: tensor<2x3xf32>, %i: tensor<2xi64>) {
  // expected-error@+1 {{gather index rank 1 differs from input rank 2}}
  %0 = tg.gather %x, %i dim 1 : tensor<2x3xf32>, tensor<2xi64>
  return
}

// -----

func.func @cross_entropy_labels(%l: tensor<4x10xf32>, %y: tensor<5xi64>) {
  // expected-error@+1 {{cross_entropy labels shape [5] must be the logits shape [4, 10] without its last (class) dim}}
  %0 = tg.cross_entropy %l, %y : tensor<4x10xf32>, tensor<5xi64>
  return
}

// -----

func.func @sdpa_heads(%q: tensor<1x4x8x16xf32>, %kv: tensor<1x3x8x16xf32>) {
  // expected-error@+1 {{sdpa key/value heads (3) must be equal and divide query heads (4)}}
  %0 = tg.sdpa %q, %kv, %kv causal : tensor<1x4x8x16xf32>, tensor<1x3x8x16xf32>, tensor<1x3x8x16xf32>
  return
}

// -----

func.func @layer_norm_weight(%x: tensor<2x16xf32>, %g: tensor<8xf32>) {
  // expected-error@+1 {{layer_norm weight shape [8] is not a trailing part of input shape [2, 16]}}
  %0 = tg.layer_norm %x, %g, %g eps 1.0e-5 : tensor<2x16xf32>, tensor<8xf32>, tensor<8xf32>
  return
}

// -----

func.func @linear_features(%x: tensor<2x16xf32>, %w: tensor<4x8xf32>) {
  // expected-error@+1 {{linear input features 16 differ from weight in-features 8}}
  %0 = tg.linear %x, %w : tensor<2x16xf32>, tensor<4x8xf32>
  return
}

// -----

func.func @gelu_mode(%x: tensor<2xf32>) {
  // expected-error@+1 {{approximate must be "none" or "tanh", got "fast"}}
  %0 = tg.gelu %x approximate "fast" : tensor<2xf32>
  return
}

// -----

func.func @dropout_p(%x: tensor<2xf32>) {
  // expected-error@+1 {{p must be in [0, 1), got 1.5}}
  %0 = tg.dropout %x p 1.5 seed 0 : tensor<2xf32>
  return
}

// -----

func.func @iota_dim() {
  // expected-error@+1 {{dim 2 is out of range for rank 2}}
  %0 = tg.iota dim 2 : tensor<2x3xi64>
  return
}

// -----

func.func @compare_predicate(%a: tensor<2xf32>) {
  // expected-error@+2 {{expected ::spmdc::tg::ComparePredicate to be one of: eq, ne, lt, le, gt, ge}}
  // expected-error@+1 {{failed to parse TG_ComparePredicateAttr parameter 'value'}}
  %0 = tg.compare less, %a, %a : tensor<2xf32>, tensor<2xf32>
  return
}

// -----

func.func @convert_shape(%a: tensor<2xf32>) {
  // expected-error@+1 {{changes the shape from [2] to [3]}}
  %0 = tg.convert %a : tensor<2xf32> to tensor<3xi64>
  return
}

// -----

// A role written as a string (the form before roles were an enum).
// expected-error@+1 {{argument #0: 'tg.role' must be #tg.role<param>, <data>, <state> or <hyper>, got "param"}}
func.func @string_role(%x: tensor<2xf32> {tg.name = "x", tg.role = "param"}) {
  return
}

// -----

// expected-error@+2 {{expected ::spmdc::tg::Role to be one of: param, data, state, loss, output, grad, hyper}}
// expected-error@+1 {{failed to parse TG_RoleAttr parameter 'value'}}
func.func @bad_role(%x: tensor<2xf32> {tg.name = "x", tg.role = #tg.role<weight>}) {
  return
}

// -----

// expected-error@+1 {{argument #0: 'tg.role' must be #tg.role<param>, <data>, <state> or <hyper>, got #tg.role<loss>}}
func.func @result_role_on_argument(%x: tensor<2xf32> {tg.name = "x", tg.role = #tg.role<loss>}) {
  return
}

// -----

// expected-error@+1 {{result #0: 'tg.role' must be #tg.role<loss>, <output>, <param>, <state> or <grad>, got #tg.role<data>}}
func.func @bad_result_role(%x: tensor<2xf32>) -> (tensor<2xf32> {tg.role = #tg.role<data>}) {
  return %x : tensor<2xf32>
}

// -----

// A hyperparameter (the learning rate) is fed, never returned.
// expected-error@+1 {{result #0: 'tg.role' must be #tg.role<loss>, <output>, <param>, <state> or <grad>, got #tg.role<hyper>}}
func.func @hyper_result(%x: tensor<f64>) -> (tensor<f64> {tg.role = #tg.role<hyper>}) {
  return %x : tensor<f64>
}

// -----

// expected-error@+1 {{argument #0: 'tg.default' must be a float}}
func.func @bad_default(%lr: tensor<f64> {tg.name = "lr", tg.role = #tg.role<hyper>, tg.default = "0.1"}) {
  return
}

// -----

// expected-error@+1 {{argument #0: 'tg.name' must be a string}}
func.func @bad_name(%x: tensor<2xf32> {tg.name = 3 : i64}) {
  return
}

// -----

// expected-error@+1 {{argument #0: unknown attribute 'tg.shard'}}
func.func @unknown_attr(%x: tensor<2xf32> {tg.shard = "S(0)"}) {
  return
}

// -----

func.func @dynamic_shape(%a: tensor<?xf32>) {
  // expected-error@+1 {{'tg.relu' op operand #0 must be statically shaped tensor}}
  %0 = tg.relu %a : tensor<?xf32>
  return
}

// -----

// expected-error@+1 {{reduction must list exactly the factors no result spans}}
func.func private @rule_reduction() attributes {tg.sharding_rule = #tg.sharding_rule<([i, k], [k, j])->([i, j]) {i=2, j=3, k=4} reduction={j}>}

// -----

// expected-error@+1 {{expected a size for every factor}}
func.func private @rule_sizes() attributes {tg.sharding_rule = #tg.sharding_rule<([i, j])->([i, j]) {i=2}>}

// -----

// expected-error@+1 {{unknown clause 'blocked' (expected reduction, need_replication, partial, linear, combine or indexed)}}
func.func private @rule_clause() attributes {tg.sharding_rule = #tg.sharding_rule<([i])->([i]) {i=2} blocked={i}>}

// -----

// expected-error@+1 {{expected factor=operand for a factor and an operand of the rule}}
func.func private @rule_indexed() attributes {tg.sharding_rule = #tg.sharding_rule<([i], [j])->([j]) {i=4, j=2} indexed={i=2}>}

// -----

// expected-error@+1 {{linear names operand 1 of an op with 1}}
func.func private @rule_linear() attributes {tg.sharding_rule = #tg.sharding_rule<([i])->([i]) {i=2} linear={1}>}
