// Compile every .py under DIR to checked-hash .pyc with Pyodide's CPython 3.13 (WebAssembly), for machines without a
// native Python 3.13: bytecode depends only on the CPython minor version, and a checked-hash .pyc validates against
// its source's hash wherever it is loaded (Lambda's python3.13 runtime). Usage: node compile.mjs DIR...
import { loadPyodide } from "pyodide";

const dirs = process.argv.slice(2);
const pyodide = await loadPyodide();
pyodide.runPython(`
import sys
if sys.version_info[:2] != (3, 13):
    raise SystemExit(f"Pyodide's CPython is {sys.version.split()[0]}, not 3.13")
`);
let failed = false;
for (const [index, dir] of dirs.entries()) {
  const mount = `/build${index}`;
  pyodide.FS.mkdirTree(mount);
  pyodide.FS.mount(pyodide.FS.filesystems.NODEFS, { root: dir }, mount);
  pyodide.globals.set("mount", mount);
  const ok = pyodide.runPython(`
import compileall, py_compile
compileall.compile_dir(mount, quiet=1, invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH)
`);
  if (!ok) {
    console.error(`compiling ${dir} failed`);
    failed = true;
  }
}
process.exit(failed ? 1 : 0);
