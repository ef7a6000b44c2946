# Generates the C++ side of the contract with the Python front end (include/onnxproof/contract/
# NAME.h in the build tree: structs, a checking reader and a writer per document) from
# schemas/NAME.schema.json with scripts/contract-codegen.py, the same files the Python package
# loads. Like the finding codes, a change to a schema or to the generator re-runs configure.
find_package(Python3 REQUIRED COMPONENTS Interpreter)

function(onnxproof_generate_contracts schema_dir output_dir)
  file(GLOB schemas CONFIGURE_DEPENDS "${schema_dir}/*.schema.json")
  set(generator "${PROJECT_SOURCE_DIR}/scripts/contract-codegen.py")
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${schemas} "${generator}")
  execute_process(COMMAND "${Python3_EXECUTABLE}" "${generator}" "${schema_dir}" "${output_dir}"
                  RESULT_VARIABLE failed ERROR_VARIABLE why)
  if(failed)
    message(FATAL_ERROR "generating the contract headers from ${schema_dir} failed: ${why}")
  endif()
endfunction()
