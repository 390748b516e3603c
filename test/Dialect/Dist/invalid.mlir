// RUN: spmdc-opt %s -split-input-file -verify-diagnostics

func.func @no_mesh(%x: tensor<4xf32>) {
  // expected-error@+1 {{needs a module attribute 'dist.mesh' = {axes = [...], shape = [...]}}}
  %0 = dist.all_reduce %x axes ["dp"] : tensor<4xf32>
  return
}

// -----

module attributes {dist.mesh = {axes = ["dp"], shape = array<i64: 2>}} {
  func.func @unknown_axis(%x: tensor<4xf32>) {
    // expected-error@+1 {{needs a non-empty list of mesh axes, got ["tp"]}}
    %0 = dist.all_reduce %x axes ["tp"] : tensor<4xf32>
    return
  }
}

// -----

module attributes {dist.mesh = {axes = ["dp"], shape = array<i64: 2>}} {
  func.func @gather_size(%x: tensor<4xf32>) {
    // expected-error@+1 {{expects dim 0 to be multiplied by the group size 2, got 4 -> 4}}
    %0 = dist.all_gather %x axes ["dp"] dim 0 : tensor<4xf32> -> tensor<4xf32>
    return
  }
}

// -----

module attributes {dist.mesh = {axes = ["dp"], shape = array<i64: 2>}} {
  func.func @scatter_size(%x: tensor<4x2xf32>) {
    // expected-error@+1 {{expects dim 1 to be unchanged, got 2 -> 1}}
    %0 = dist.reduce_scatter %x axes ["dp"] dim 0 : tensor<4x2xf32> -> tensor<2x1xf32>
    return
  }
}

// -----

module attributes {dist.mesh = {axes = ["dp"], shape = array<i64: 2>}} {
  func.func @slice_dim(%x: tensor<4xf32>) {
    // expected-error@+1 {{dim 1 is out of range}}
    %0 = dist.local_slice %x axes ["dp"] dim 1 : tensor<4xf32> -> tensor<2xf32>
    return
  }
}

// -----

module attributes {dist.mesh = {axes = ["dp"], shape = array<i64: 2>}} {
  func.func @exchange(%x: tensor<4x8xf32>) {
    // expected-error@+1 {{result type does not match the exchange}}
    %0 = dist.all_to_all %x axes ["dp"] split_dim 1 concat_dim 0 : tensor<4x8xf32> -> tensor<4x8xf32>
    return
  }
}

// -----

// expected-error@+1 {{expects dims as lists of mesh axis names, each axis used once, got [["dp"], ["dp"]]}}
func.func private @axis_twice(tensor<4x4xf32> {dist.sharding = #dist.sharding<[["dp"], ["dp"]]>})

// -----

// expected-error@+1 {{expects partial as a list of mesh axis names that no dim uses, got ["dp"]}}
func.func private @partial_and_split(tensor<4xf32> {dist.sharding = #dist.sharding<[["dp"]] partial ["dp"]>})


// -----

// expected-error@+1 {{expects a logical shape of 2 dims, got 1}}
func.func @logical_rank(%x: tensor<4x2xf32> {dist.sharding = #dist.sharding<[["dp"], []] logical[7]>}) {
  return
}
