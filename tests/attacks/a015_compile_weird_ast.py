# attack: compile a hand-built AST (import of posix with level 0, names the tokenizer never saw) and run it
# expect: denied
# layer: import
import ast

tree = ast.Module(body=[ast.ImportFrom(module="posix", names=[ast.alias(name="system")], level=0),
                        ast.Expr(ast.Call(ast.Name("system", ast.Load()),
                                          [ast.Constant("echo ESCAPED")], []))],
                  type_ignores=[])
exec(compile(ast.fix_missing_locations(tree), "<ast>", "exec"))
