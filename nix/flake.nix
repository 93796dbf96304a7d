{
  description = "repro: the pinned software stacks of the reference experiments";

  # nixpkgs is pinned by rev and narHash in flake.lock (a real nixos-unstable revision of
  # 2026-02-23). The first realization on a networked machine fetches it; see README "Nix".
  inputs.nixpkgs.url = "github:nixos/nixpkgs/2fc6539b481e1d2569f25f8799236694180c0993";

  outputs = { self, nixpkgs }:
    let
      system = "x86_64-linux";
      pkgs = import nixpkgs { inherit system; };
      python = pkgs.python311;

      # What nixpkgs lacks (MLPerf LoadGen) or has at another version (TVM) enters from its
      # PyPI wheel, fixed by sha256 like any fixed-output path.
      wheel = { pname, version, file, tag, hash, deps ? [ ] }:
        python.pkgs.buildPythonPackage {
          inherit pname version;
          format = "wheel";
          src = pkgs.fetchurl {
            url = "https://files.pythonhosted.org/packages/${tag}/${builtins.substring 0 1 pname}/${pname}/${file}";
            inherit hash;
          };
          nativeBuildInputs = [ pkgs.autoPatchelfHook ];
          buildInputs = [ pkgs.stdenv.cc.cc.lib pkgs.zlib ];
          propagatedBuildInputs = deps;
          dontStrip = true;
          doCheck = false;
        };

      mlcommons-loadgen = wheel {
        pname = "mlcommons_loadgen";
        version = "6.0.17";
        tag = "cp311";
        file = "mlcommons_loadgen-6.0.17-cp311-cp311-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl";
        hash = "sha256-Op/muvganBubLO67hDE3c5lqs8S067DUZ7Rf8XcwrWs=";
      };
      # 0.1.15.x segfaults in JSON serialization, which kills tuning: keep 0.1.14.post0.
      apache-tvm-ffi = wheel {
        pname = "apache_tvm_ffi";
        version = "0.1.14.post0";
        tag = "cp311";
        file = "apache_tvm_ffi-0.1.14.post0-cp311-cp311-manylinux_2_24_x86_64.manylinux_2_28_x86_64.whl";
        hash = "sha256-hXM+wR0sndJYqhNOP7qcQ3Oo9FwmHyo6PfINrtkqppk=";
        deps = [ python.pkgs.typing-extensions ];
      };
      # LLVM is linked into the wheel; it has no DNNL/oneDNN (the Spack stack adds that).
      apache-tvm = wheel {
        pname = "apache_tvm";
        version = "0.27.0.post1";
        tag = "py3";
        file = "apache_tvm-0.27.0.post1-py3-none-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl";
        hash = "sha256-9QP8kDtuFv2l2qysZpjsuLw4k39X2nqin2x6sWnQhlc=";
        deps = with python.pkgs; [ apache-tvm-ffi ml-dtypes numpy typing-extensions psutil cloudpickle ];
      };

      common = ps: with ps; [
        numpy pydantic click jsonschema onnx pandas scikit-learn pip-tools mlcommons-loadgen
      ];
      shell = name: extra: pkgs.mkShell {
        name = "repro-${name}";
        packages = [ (python.withPackages (ps: common ps ++ extra ps)) ];
        REPRO_NIX_SHELL = name;
      };
    in
    {
      packages.${system} = { inherit mlcommons-loadgen apache-tvm apache-tvm-ffi; };
      devShells.${system} = rec {
        # specs/ort-*.json: onnxruntime from nixpkgs
        ort = shell "ort" (ps: [ ps.onnxruntime ]);
        # specs/tvm-resnet50.json: TVM 0.27 (wheel) next to onnxruntime for agreement checks
        tvm = shell "tvm" (ps: [ ps.onnxruntime apache-tvm ]);
        default = ort;
      };
    };
}
