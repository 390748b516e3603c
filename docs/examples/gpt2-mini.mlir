module attributes {tg.model = "gpt2-mini"} {
  func.func @main(%arg0: tensor<4x16xi64> {tg.index_bound = 96 : i64, tg.name = "tokens", tg.role = #tg.role<data>}, %arg1: tensor<4x16xi64> {tg.index_bound = 96 : i64, tg.name = "labels", tg.role = #tg.role<data>}, %arg2: tensor<96x32xf32> {tg.name = "wte.weight", tg.role = #tg.role<param>}, %arg3: tensor<16x32xf32> {tg.name = "wpe.weight", tg.role = #tg.role<param>}, %arg4: tensor<32xf32> {tg.name = "h.0.ln_1.weight", tg.role = #tg.role<param>}, %arg5: tensor<32xf32> {tg.name = "h.0.ln_1.bias", tg.role = #tg.role<param>}, %arg6: tensor<32x32xf32> {tg.name = "h.0.attn.q_proj.weight", tg.role = #tg.role<param>}, %arg7: tensor<32xf32> {tg.name = "h.0.attn.q_proj.bias", tg.role = #tg.role<param>}, %arg8: tensor<32x32xf32> {tg.name = "h.0.attn.k_proj.weight", tg.role = #tg.role<param>}, %arg9: tensor<32xf32> {tg.name = "h.0.attn.k_proj.bias", tg.role = #tg.role<param>}, %arg10: tensor<32x32xf32> {tg.name = "h.0.attn.v_proj.weight", tg.role = #tg.role<param>}, %arg11: tensor<32xf32> {tg.name = "h.0.attn.v_proj.bias", tg.role = #tg.role<param>}, %arg12: tensor<32x32xf32> {tg.name = "h.0.attn.c_proj.weight", tg.role = #tg.role<param>}, %arg13: tensor<32xf32> {tg.name = "h.0.attn.c_proj.bias", tg.role = #tg.role<param>}, %arg14: tensor<32xf32> {tg.name = "h.0.ln_2.weight", tg.role = #tg.role<param>}, %arg15: tensor<32xf32> {tg.name = "h.0.ln_2.bias", tg.role = #tg.role<param>}, %arg16: tensor<128x32xf32> {tg.name = "h.0.mlp.c_fc.weight", tg.role = #tg.role<param>}, %arg17: tensor<128xf32> {tg.name = "h.0.mlp.c_fc.bias", tg.role = #tg.role<param>}, %arg18: tensor<32x128xf32> {tg.name = "h.0.mlp.c_proj.weight", tg.role = #tg.role<param>}, %arg19: tensor<32xf32> {tg.name = "h.0.mlp.c_proj.bias", tg.role = #tg.role<param>}, %arg20: tensor<32xf32> {tg.name = "h.1.ln_1.weight", tg.role = #tg.role<param>}, %arg21: tensor<32xf32> {tg.name = "h.1.ln_1.bias", tg.role = #tg.role<param>}, %arg22: tensor<32x32xf32> {tg.name = "h.1.attn.q_proj.weight", tg.role = #tg.role<param>}, %arg23: tensor<32xf32> {tg.name = "h.1.attn.q_proj.bias", tg.role = #tg.role<param>}, %arg24: tensor<32x32xf32> {tg.name = "h.1.attn.k_proj.weight", tg.role = #tg.role<param>}, %arg25: tensor<32xf32> {tg.name = "h.1.attn.k_proj.bias", tg.role = #tg.role<param>}, %arg26: tensor<32x32xf32> {tg.name = "h.1.attn.v_proj.weight", tg.role = #tg.role<param>}, %arg27: tensor<32xf32> {tg.name = "h.1.attn.v_proj.bias", tg.role = #tg.role<param>}, %arg28: tensor<32x32xf32> {tg.name = "h.1.attn.c_proj.weight", tg.role = #tg.role<param>}, %arg29: tensor<32xf32> {tg.name = "h.1.attn.c_proj.bias", tg.role = #tg.role<param>}, %arg30: tensor<32xf32> {tg.name = "h.1.ln_2.weight", tg.role = #tg.role<param>}, %arg31: tensor<32xf32> {tg.name = "h.1.ln_2.bias", tg.role = #tg.role<param>}, %arg32: tensor<128x32xf32> {tg.name = "h.1.mlp.c_fc.weight", tg.role = #tg.role<param>}, %arg33: tensor<128xf32> {tg.name = "h.1.mlp.c_fc.bias", tg.role = #tg.role<param>}, %arg34: tensor<32x128xf32> {tg.name = "h.1.mlp.c_proj.weight", tg.role = #tg.role<param>}, %arg35: tensor<32xf32> {tg.name = "h.1.mlp.c_proj.bias", tg.role = #tg.role<param>}, %arg36: tensor<32xf32> {tg.name = "ln_f.weight", tg.role = #tg.role<param>}, %arg37: tensor<32xf32> {tg.name = "ln_f.bias", tg.role = #tg.role<param>}) -> (tensor<f32> {tg.name = "loss", tg.role = #tg.role<loss>}) {
    %0 = tg.embedding %arg2, %arg0 : tensor<96x32xf32>, tensor<4x16xi64>
    %1 = tg.iota dim 0 : tensor<16xi64>
    %2 = tg.embedding %arg3, %1 : tensor<16x32xf32>, tensor<16xi64>
    %3 = tg.add %0, %2 : tensor<4x16x32xf32>, tensor<16x32xf32>
    %4 = tg.layer_norm %3, %arg4, %arg5 eps 1.000000e-05 : tensor<4x16x32xf32>, tensor<32xf32>, tensor<32xf32>
    %5 = tg.linear %4, %arg6, %arg7 : tensor<4x16x32xf32>, tensor<32x32xf32>, tensor<32xf32>
    %6 = tg.reshape %5 : tensor<4x16x32xf32> to tensor<4x16x4x8xf32>
    %7 = tg.transpose %6 perm [0, 2, 1, 3] : tensor<4x16x4x8xf32>
    %8 = tg.linear %4, %arg8, %arg9 : tensor<4x16x32xf32>, tensor<32x32xf32>, tensor<32xf32>
    %9 = tg.reshape %8 : tensor<4x16x32xf32> to tensor<4x16x4x8xf32>
    %10 = tg.transpose %9 perm [0, 2, 1, 3] : tensor<4x16x4x8xf32>
    %11 = tg.linear %4, %arg10, %arg11 : tensor<4x16x32xf32>, tensor<32x32xf32>, tensor<32xf32>
    %12 = tg.reshape %11 : tensor<4x16x32xf32> to tensor<4x16x4x8xf32>
    %13 = tg.transpose %12 perm [0, 2, 1, 3] : tensor<4x16x4x8xf32>
    %14 = tg.sdpa %7, %10, %13 causal : tensor<4x4x16x8xf32>, tensor<4x4x16x8xf32>, tensor<4x4x16x8xf32>
    %15 = tg.transpose %14 perm [0, 2, 1, 3] : tensor<4x4x16x8xf32>
    %16 = tg.reshape %15 : tensor<4x16x4x8xf32> to tensor<4x16x32xf32>
    %17 = tg.linear %16, %arg12, %arg13 : tensor<4x16x32xf32>, tensor<32x32xf32>, tensor<32xf32>
    %18 = tg.add %3, %17 : tensor<4x16x32xf32>, tensor<4x16x32xf32>
    %19 = tg.layer_norm %18, %arg14, %arg15 eps 1.000000e-05 : tensor<4x16x32xf32>, tensor<32xf32>, tensor<32xf32>
    %20 = tg.linear %19, %arg16, %arg17 : tensor<4x16x32xf32>, tensor<128x32xf32>, tensor<128xf32>
    %21 = tg.gelu %20 approximate "tanh" : tensor<4x16x128xf32>
    %22 = tg.linear %21, %arg18, %arg19 : tensor<4x16x128xf32>, tensor<32x128xf32>, tensor<32xf32>
    %23 = tg.add %18, %22 : tensor<4x16x32xf32>, tensor<4x16x32xf32>
    %24 = tg.layer_norm %23, %arg20, %arg21 eps 1.000000e-05 : tensor<4x16x32xf32>, tensor<32xf32>, tensor<32xf32>
    %25 = tg.linear %24, %arg22, %arg23 : tensor<4x16x32xf32>, tensor<32x32xf32>, tensor<32xf32>
    %26 = tg.reshape %25 : tensor<4x16x32xf32> to tensor<4x16x4x8xf32>
    %27 = tg.transpose %26 perm [0, 2, 1, 3] : tensor<4x16x4x8xf32>
    %28 = tg.linear %24, %arg24, %arg25 : tensor<4x16x32xf32>, tensor<32x32xf32>, tensor<32xf32>
    %29 = tg.reshape %28 : tensor<4x16x32xf32> to tensor<4x16x4x8xf32>
    %30 = tg.transpose %29 perm [0, 2, 1, 3] : tensor<4x16x4x8xf32>
    %31 = tg.linear %24, %arg26, %arg27 : tensor<4x16x32xf32>, tensor<32x32xf32>, tensor<32xf32>
    %32 = tg.reshape %31 : tensor<4x16x32xf32> to tensor<4x16x4x8xf32>
    %33 = tg.transpose %32 perm [0, 2, 1, 3] : tensor<4x16x4x8xf32>
    %34 = tg.sdpa %27, %30, %33 causal : tensor<4x4x16x8xf32>, tensor<4x4x16x8xf32>, tensor<4x4x16x8xf32>
    %35 = tg.transpose %34 perm [0, 2, 1, 3] : tensor<4x4x16x8xf32>
    %36 = tg.reshape %35 : tensor<4x16x4x8xf32> to tensor<4x16x32xf32>
    %37 = tg.linear %36, %arg28, %arg29 : tensor<4x16x32xf32>, tensor<32x32xf32>, tensor<32xf32>
    %38 = tg.add %23, %37 : tensor<4x16x32xf32>, tensor<4x16x32xf32>
    %39 = tg.layer_norm %38, %arg30, %arg31 eps 1.000000e-05 : tensor<4x16x32xf32>, tensor<32xf32>, tensor<32xf32>
    %40 = tg.linear %39, %arg32, %arg33 : tensor<4x16x32xf32>, tensor<128x32xf32>, tensor<128xf32>
    %41 = tg.gelu %40 approximate "tanh" : tensor<4x16x128xf32>
    %42 = tg.linear %41, %arg34, %arg35 : tensor<4x16x128xf32>, tensor<32x128xf32>, tensor<32xf32>
    %43 = tg.add %38, %42 : tensor<4x16x32xf32>, tensor<4x16x32xf32>
    %44 = tg.layer_norm %43, %arg36, %arg37 eps 1.000000e-05 : tensor<4x16x32xf32>, tensor<32xf32>, tensor<32xf32>
    %45 = tg.linear %44, %arg2 : tensor<4x16x32xf32>, tensor<96x32xf32>
    %46 = tg.cross_entropy %45, %arg1 : tensor<4x16x96xf32>, tensor<4x16xi64>
    return %46 : tensor<f32>
  }
}

