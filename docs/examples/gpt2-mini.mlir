module attributes {tg.model = "gpt2-mini"} {
  func.func @main(%arg0: tensor<4x16xi64> {tg.index_bound = 96 : i64, tg.name = "tokens", tg.role = "data"}, %arg1: tensor<4x16xi64> {tg.index_bound = 96 : i64, tg.name = "labels", tg.role = "data"}, %arg2: tensor<96x32xf32> {tg.name = "wte.weight", tg.role = "param"}, %arg3: tensor<16x32xf32> {tg.name = "wpe.weight", tg.role = "param"}, %arg4: tensor<32xf32> {tg.name = "h.0.ln_1.weight", tg.role = "param"}, %arg5: tensor<32xf32> {tg.name = "h.0.ln_1.bias", tg.role = "param"}, %arg6: tensor<96x32xf32> {tg.name = "h.0.attn.c_attn.weight", tg.role = "param"}, %arg7: tensor<96xf32> {tg.name = "h.0.attn.c_attn.bias", tg.role = "param"}, %arg8: tensor<32x32xf32> {tg.name = "h.0.attn.c_proj.weight", tg.role = "param"}, %arg9: tensor<32xf32> {tg.name = "h.0.attn.c_proj.bias", tg.role = "param"}, %arg10: tensor<32xf32> {tg.name = "h.0.ln_2.weight", tg.role = "param"}, %arg11: tensor<32xf32> {tg.name = "h.0.ln_2.bias", tg.role = "param"}, %arg12: tensor<128x32xf32> {tg.name = "h.0.mlp.c_fc.weight", tg.role = "param"}, %arg13: tensor<128xf32> {tg.name = "h.0.mlp.c_fc.bias", tg.role = "param"}, %arg14: tensor<32x128xf32> {tg.name = "h.0.mlp.c_proj.weight", tg.role = "param"}, %arg15: tensor<32xf32> {tg.name = "h.0.mlp.c_proj.bias", tg.role = "param"}, %arg16: tensor<32xf32> {tg.name = "h.1.ln_1.weight", tg.role = "param"}, %arg17: tensor<32xf32> {tg.name = "h.1.ln_1.bias", tg.role = "param"}, %arg18: tensor<96x32xf32> {tg.name = "h.1.attn.c_attn.weight", tg.role = "param"}, %arg19: tensor<96xf32> {tg.name = "h.1.attn.c_attn.bias", tg.role = "param"}, %arg20: tensor<32x32xf32> {tg.name = "h.1.attn.c_proj.weight", tg.role = "param"}, %arg21: tensor<32xf32> {tg.name = "h.1.attn.c_proj.bias", tg.role = "param"}, %arg22: tensor<32xf32> {tg.name = "h.1.ln_2.weight", tg.role = "param"}, %arg23: tensor<32xf32> {tg.name = "h.1.ln_2.bias", tg.role = "param"}, %arg24: tensor<128x32xf32> {tg.name = "h.1.mlp.c_fc.weight", tg.role = "param"}, %arg25: tensor<128xf32> {tg.name = "h.1.mlp.c_fc.bias", tg.role = "param"}, %arg26: tensor<32x128xf32> {tg.name = "h.1.mlp.c_proj.weight", tg.role = "param"}, %arg27: tensor<32xf32> {tg.name = "h.1.mlp.c_proj.bias", tg.role = "param"}, %arg28: tensor<32xf32> {tg.name = "ln_f.weight", tg.role = "param"}, %arg29: tensor<32xf32> {tg.name = "ln_f.bias", tg.role = "param"}) -> (tensor<f32> {tg.name = "loss", tg.role = "loss"}) {
    %0 = tg.embedding %arg2, %arg0 : tensor<96x32xf32>, tensor<4x16xi64>
    %1 = tg.iota dim 0 : tensor<16xi64>
    %2 = tg.embedding %arg3, %1 : tensor<16x32xf32>, tensor<16xi64>
    %3 = tg.add %0, %2 : tensor<4x16x32xf32>, tensor<16x32xf32>
    %4 = tg.layer_norm %3, %arg4, %arg5 eps 1.000000e-05 : tensor<4x16x32xf32>, tensor<32xf32>, tensor<32xf32>
    %5 = tg.linear %4, %arg6, %arg7 : tensor<4x16x32xf32>, tensor<96x32xf32>, tensor<96xf32>
    %6 = tg.slice %5 dim 2 start 0 end 32 step 1 : tensor<4x16x96xf32>
    %7 = tg.reshape %6 : tensor<4x16x32xf32> to tensor<4x16x4x8xf32>
    %8 = tg.transpose %7 perm [0, 2, 1, 3] : tensor<4x16x4x8xf32>
    %9 = tg.slice %5 dim 2 start 32 end 64 step 1 : tensor<4x16x96xf32>
    %10 = tg.reshape %9 : tensor<4x16x32xf32> to tensor<4x16x4x8xf32>
    %11 = tg.transpose %10 perm [0, 2, 1, 3] : tensor<4x16x4x8xf32>
    %12 = tg.slice %5 dim 2 start 64 end 96 step 1 : tensor<4x16x96xf32>
    %13 = tg.reshape %12 : tensor<4x16x32xf32> to tensor<4x16x4x8xf32>
    %14 = tg.transpose %13 perm [0, 2, 1, 3] : tensor<4x16x4x8xf32>
    %15 = tg.sdpa %8, %11, %14 causal : tensor<4x4x16x8xf32>, tensor<4x4x16x8xf32>, tensor<4x4x16x8xf32>
    %16 = tg.transpose %15 perm [0, 2, 1, 3] : tensor<4x4x16x8xf32>
    %17 = tg.reshape %16 : tensor<4x16x4x8xf32> to tensor<4x16x32xf32>
    %18 = tg.linear %17, %arg8, %arg9 : tensor<4x16x32xf32>, tensor<32x32xf32>, tensor<32xf32>
    %19 = tg.add %3, %18 : tensor<4x16x32xf32>, tensor<4x16x32xf32>
    %20 = tg.layer_norm %19, %arg10, %arg11 eps 1.000000e-05 : tensor<4x16x32xf32>, tensor<32xf32>, tensor<32xf32>
    %21 = tg.linear %20, %arg12, %arg13 : tensor<4x16x32xf32>, tensor<128x32xf32>, tensor<128xf32>
    %22 = tg.gelu %21 approximate "tanh" : tensor<4x16x128xf32>
    %23 = tg.linear %22, %arg14, %arg15 : tensor<4x16x128xf32>, tensor<32x128xf32>, tensor<32xf32>
    %24 = tg.add %19, %23 : tensor<4x16x32xf32>, tensor<4x16x32xf32>
    %25 = tg.layer_norm %24, %arg16, %arg17 eps 1.000000e-05 : tensor<4x16x32xf32>, tensor<32xf32>, tensor<32xf32>
    %26 = tg.linear %25, %arg18, %arg19 : tensor<4x16x32xf32>, tensor<96x32xf32>, tensor<96xf32>
    %27 = tg.slice %26 dim 2 start 0 end 32 step 1 : tensor<4x16x96xf32>
    %28 = tg.reshape %27 : tensor<4x16x32xf32> to tensor<4x16x4x8xf32>
    %29 = tg.transpose %28 perm [0, 2, 1, 3] : tensor<4x16x4x8xf32>
    %30 = tg.slice %26 dim 2 start 32 end 64 step 1 : tensor<4x16x96xf32>
    %31 = tg.reshape %30 : tensor<4x16x32xf32> to tensor<4x16x4x8xf32>
    %32 = tg.transpose %31 perm [0, 2, 1, 3] : tensor<4x16x4x8xf32>
    %33 = tg.slice %26 dim 2 start 64 end 96 step 1 : tensor<4x16x96xf32>
    %34 = tg.reshape %33 : tensor<4x16x32xf32> to tensor<4x16x4x8xf32>
    %35 = tg.transpose %34 perm [0, 2, 1, 3] : tensor<4x16x4x8xf32>
    %36 = tg.sdpa %29, %32, %35 causal : tensor<4x4x16x8xf32>, tensor<4x4x16x8xf32>, tensor<4x4x16x8xf32>
    %37 = tg.transpose %36 perm [0, 2, 1, 3] : tensor<4x4x16x8xf32>
    %38 = tg.reshape %37 : tensor<4x16x4x8xf32> to tensor<4x16x32xf32>
    %39 = tg.linear %38, %arg20, %arg21 : tensor<4x16x32xf32>, tensor<32x32xf32>, tensor<32xf32>
    %40 = tg.add %24, %39 : tensor<4x16x32xf32>, tensor<4x16x32xf32>
    %41 = tg.layer_norm %40, %arg22, %arg23 eps 1.000000e-05 : tensor<4x16x32xf32>, tensor<32xf32>, tensor<32xf32>
    %42 = tg.linear %41, %arg24, %arg25 : tensor<4x16x32xf32>, tensor<128x32xf32>, tensor<128xf32>
    %43 = tg.gelu %42 approximate "tanh" : tensor<4x16x128xf32>
    %44 = tg.linear %43, %arg26, %arg27 : tensor<4x16x128xf32>, tensor<32x128xf32>, tensor<32xf32>
    %45 = tg.add %40, %44 : tensor<4x16x32xf32>, tensor<4x16x32xf32>
    %46 = tg.layer_norm %45, %arg28, %arg29 eps 1.000000e-05 : tensor<4x16x32xf32>, tensor<32xf32>, tensor<32xf32>
    %47 = tg.linear %46, %arg2 : tensor<4x16x32xf32>, tensor<96x32xf32>
    %48 = tg.cross_entropy %47, %arg1 : tensor<4x16x96xf32>, tensor<4x16xi64>
    return %48 : tensor<f32>
  }
}

