# Every construct rv_pyconfig_parse accepts; syntax.json is what Python makes of it
# (tools/pyconfig_to_json.py).
_base_ = ['../_base_/a.py', "b.py"]  # trailing comment
a = 1
b = -2.5e-3
c = +7
d = 0x1F
e = 0o17
f = 0b101
g = 1_000_000
h = .5
i = 5.
j = 1E6
k = -(3)
big = 1180591620717411303424
s1 = 'single \'quoted\' \n\t\\ # not a comment'
s2 = "double \"quoted\" \x41\u00e9\U0001F600 \101 é"
s3 = '''triple
line'''
s4 = """triple "double" """
s5 = r'raw\n\d\''
s6 = ('implicit '
      'concat' "enation")
s7 = 'unknown \q escape'
s8 = u'unicode prefix'
s9 = 'continued \
line'
t0 = ()
t1 = (1, )
t2 = (1, 2, (3, [4, {5: 'five'}]))
bare = 1, 'two', None
bare1 = 'x',
paren = (42)
l = [
    1,  # one

    2,
]
dct = {'a': 1, "b": [True, False, None], 'a': 3, -1: 'neg'}
cfg = dict(type='X', nested=dict(k=[dict(x=1), dict()], t=(1,)), a=1, a2=a)
ref = cfg
rng = range(3)
rng2 = range(2, 10, 3)
rng3 = range(5, 0, -2)
rng4 = range(0)
lst = list(range(2))
tpl = tuple([1, 2])
cont = \
    5
p = 1; q = 2;
a = 10
