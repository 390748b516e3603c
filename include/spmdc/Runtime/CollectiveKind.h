/*===- CollectiveKind.h - the codes of spmd_collective (C ABI) ----*- C -*-===*\
|*                                                                            *|
|* The first argument of spmd_collective_<dtype> (Collectives.h): which       *|
|* collective a call of compiled code is. One list for both sides of the      *|
|* contract: --convert-dist-to-runtime writes these codes into the call's     *|
|* constants, the runtime dispatches on them. No MLIR, no MPI.                *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#ifndef SPMDC_RUNTIME_COLLECTIVEKIND_H
#define SPMDC_RUNTIME_COLLECTIVEKIND_H

enum spmd_collective_kind {
  /// out = the sum of the group members' in.
  SPMD_COLLECTIVE_ALL_REDUCE = 0,
  /// The members' in, concatenated along `dim`.
  SPMD_COLLECTIVE_ALL_GATHER = 1,
  /// This member's chunk along `dim` of the members' summed in.
  SPMD_COLLECTIVE_REDUCE_SCATTER = 2,
  /// in split along `dim`, chunk i to member i, received concatenated along
  /// `dim2`.
  SPMD_COLLECTIVE_ALL_TO_ALL = 3,
  /// No communication: this member's chunk of in along `dim`.
  SPMD_COLLECTIVE_LOCAL_SLICE = 4,
  /// out = the elementwise max of the group members' in.
  SPMD_COLLECTIVE_ALL_REDUCE_MAX = 5
};

#endif /* SPMDC_RUNTIME_COLLECTIVEKIND_H */
