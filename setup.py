"""Install the top-level folders as the import package ``coupler`` (DESIGN.md).

``coupler.bus`` <- ``bus/``, ``coupler.canonical`` <- ``canonical/`` and so on;
``coupler`` itself is an implicit namespace package. Every subpackage below a
folder is found automatically, and every schema file ships as package data.
"""

from setuptools import Extension, find_namespace_packages, setup

FOLDERS = ("bus", "adapters", "canonical", "translators", "schemas")

packages: list[str] = []
package_dir: dict[str, str] = {}
for folder in FOLDERS:
    package_dir[f"coupler.{folder}"] = folder
    packages.append(f"coupler.{folder}")
    packages += [
        f"coupler.{folder}.{sub}"
        for sub in find_namespace_packages(folder, exclude=["*__pycache__*"])
    ]

# the fused copybook kernel (translators/copybook/_fused.c), compiled with the system's C
# compiler; optional: without a compiler the install goes on and the NumPy kernels decode
# (coupler.translators.copybook.kernels.FusedKernel says which is in use)
fused = Extension(
    "coupler.translators.copybook._fused",
    sources=["translators/copybook/_fused.c"],
    extra_compile_args=["-O3"],
    optional=True,
)

setup(
    ext_modules=[fused],
    packages=packages,
    package_dir=package_dir,
    package_data={pkg: ["*.avsc", "*.xsd", "*.wsdl", "*.cpy", "*.toml", "*.js", "*.css", "*.tmpl"] for pkg in packages},
)
