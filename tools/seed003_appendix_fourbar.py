#!/usr/bin/python3
"""Sinigaglia 2016, Appendix A (MATLAB) transcribed to numpy, run on the thesis's own
four-bar scenario: the truth, the open-loop wrong model, and the thesis's errorEKF with its
plant noise S, encoder noise R, P0 = I and velocity-problem correction, over 20 noise seeds.

It is a peer for scenarios/fourbar_sinigaglia.json: what the published code gives on the
same problem (Table 2 of the thesis is not reproduced by it; see the report it prints).
Run: /usr/bin/python3 tools/seed003_appendix_fourbar.py   (about 20 s)
"""
import numpy as np
xa,ya,xb,yb = 0.,0.,10.,0.
L1,L2,L3 = 2.,8.,5.
def trick(q):
    x1,y1,phi = q[0],q[1],q[4]
    if abs(np.sin(phi)) > 0.7071:
        return (x1-xa)-L1*np.cos(phi), np.array([1,0,0,0,L1*np.sin(phi)]), L1*np.cos(phi)
    return (y1-ya)-L1*np.sin(phi), np.array([0,1,0,0,-L1*np.cos(phi)]), L1*np.sin(phi)
def jac(q):
    x1,y1,x2,y2,phi=q
    t,tA,_=trick(q)
    J=np.array([[2*(x1-xa),2*(y1-ya),0,0,0],[-2*(x2-x1),-2*(y2-y1),2*(x2-x1),2*(y2-y1),0],[0,0,-2*(xb-x2),-2*(yb-y2),0],tA])
    P=np.array([(x1-xa)**2+(y1-ya)**2-L1**2,(x2-x1)**2+(y2-y1)**2-L2**2,(xb-x2)**2+(yb-y2)**2-L3**2,t])
    return J,P
def jdot(q,qd):
    _,_,tB=trick(q)
    x1d,y1d,x2d,y2d,pd=qd
    return np.array([[2*x1d,2*y1d,0,0,0],[-2*(x2d-x1d),-2*(y2d-y1d),2*(x2d-x1d),2*(y2d-y1d),0],[0,0,2*x2d,2*y2d,0],[0,0,0,0,tB*pd]])
def position(q):
    for k in range(1000):
        J,P=jac(q)
        q[:4]-=np.linalg.solve(J[:,:4],P)
        if np.linalg.norm(P)<1e-15: break
    return q
def velocity(q,pd):
    J,_=jac(q); _,tA,_=trick(q)
    return np.append(np.linalg.solve(J[:,:4],-pd*np.array([0,0,0,tA[-1]])),pd)
def massf(m,g):
    bar=lambda mm: mm/6*np.array([[2,0,1,0],[0,2,0,1],[1,0,2,0],[0,1,0,2]])
    M=np.zeros((5,5)); M[0:2,0:2]=bar(m[0])[2:4,2:4]; M[2:4,2:4]=bar(m[2])[0:2,0:2]; M[0:4,0:4]+=bar(m[1])
    Q=np.zeros(5); Q[1]=-(m[0]+m[1])*g/2; Q[3]=-(m[1]+m[2])*g/2
    return M,Q
def ali3(q,qd,qdd,Ts,M,Q):
    alpha=1e9; tol=1e-7; lam=0
    qdh=-(2/Ts*q+qd); qddh=-(4/Ts**2*q+4/Ts*qd+qdd)
    q=q+Ts*qd+0.5*Ts**2*qdd; qd=2/Ts*q+qdh; qdd=4/Ts**2*q+qddh
    err=1; k=0
    while err>tol and k<1000:
        J,P=jac(q); lam=lam+alpha*P
        f=Ts**2/4*(M@qdd+J.T@(alpha*P)+J.T@lam-Q)
        fq=M+0.25*Ts**2*(J.T@(alpha*J))
        dq=np.linalg.solve(fq,-f); q=q+dq; qd=2/Ts*q+qdh; qdd=4/Ts**2*q+qddh
        err=np.linalg.norm(dq); k+=1
    J,P=jac(q)
    qd=np.linalg.solve(fq,M@qd)
    B=jdot(q,qd)
    qdd=np.linalg.solve(fq,M@qdd-Ts**2/4*J.T@(alpha*(B@qd)))
    return q,qd,qdd
def energy(q,qd,M,m,g):
    return 0.5*qd@M@qd + 0.5*g*(m[0]*(q[1]+ya)+m[1]*(q[1]+q[3])+m[2]*(q[3]+yb))
Ts=5e-3
m=[2,8,5]; mf=[2,5,5]
M,Q=massf(m,9.806); Mf,Qf=massf(mf,9.0)
q=position(np.array([0,4,8,3,np.radians(60)],float)); qd=velocity(q,1.0); qdd=np.zeros(5); qdd[4]=1e-4
qf=position(np.array([0,2,8,3,np.radians(90)],float)); qdf=velocity(qf,-10.0); qddf=np.zeros(5); qddf[4]=1e-4
E0=energy(q,qd,M,m,9.806); E0f=energy(qf,qdf,Mf,mf,9.0)
ex=[];evx=[]; Es=[]; Efs=[]
for k in np.arange(0.005, 10-Ts/2, Ts):
    Q[4]= 100 if (k>4 and k<5) else -10
    q,qd,qdd=ali3(q,qd,qdd,Ts,M,Q)
    qf,qdf,qddf=ali3(qf,qdf,qddf,Ts,Mf,Qf)
    ex.append(q[0]-qf[0]); evx.append(qd[0]-qdf[0]); Es.append(energy(q,qd,M,m,9.806)); Efs.append(energy(qf,qdf,Mf,mf,9.0))
ex=np.array(ex[19:]); evx=np.array(evx[19:])
print("seed-code open-loop model: rms x1 %.4f max %.4f   rms vx1 %.4f max %.4f" % (np.sqrt(np.mean(ex**2)), np.abs(ex).max(), np.sqrt(np.mean(evx**2)), np.abs(evx).max()))
print("model energy: start %.1f J, end %.1f J;  truth energy start %.1f end %.1f" % (E0f, Efs[-1], E0, Es[-1]))
print("final truth q", q, "  model q", qf)

# --- the thesis's observer (A.4.1-A.4.2) on the same runs, 20 noise seeds ---
def observer_run(seed):
    rng=np.random.default_rng(seed)
    n_pos=1; n_vel=1
    S=1e-1*np.diag([np.radians(n_pos)*Ts, np.radians(n_vel)*Ts/5e-3])
    R=np.radians(1)**2; P=np.eye(2); F=np.array([[1,Ts],[0,1]]); H=np.array([1.,0.])
    q=position(np.array([0,4,8,3,np.radians(60)],float)); qd=velocity(q,1.0); qdd=np.zeros(5); qdd[4]=1e-4
    qk=position(np.array([0,2,8,3,np.radians(90)],float)); qdk=velocity(qk,-10.0); qddk=np.zeros(5); qddk[4]=1e-4
    Qt=Q.copy()
    e1=[];e2=[]
    for k in np.arange(0.005, 10-Ts/2, Ts):
        Qt[4]= 100 if (k>4 and k<5) else -10
        q,qd,qdd=ali3(q,qd,qdd,Ts,M,Qt)
        Pp=F@P@F.T+S
        qk,qdk,qddk=ali3(qk,qdk,qddk,Ts,Mf,Qf)
        L=Pp@H/(H@Pp@H+R)
        inn=q[4]+np.sqrt(R)*rng.standard_normal()-qk[4]
        e=L*inn
        P=(np.eye(2)-np.outer(L,H))@Pp@(np.eye(2)-np.outer(L,H)).T+np.outer(L,L)*R
        qk=qk+velocity(qk,e[0]); qdk=qdk+velocity(qk,e[1])
        e1.append(q[0]-qk[0]); e2.append(qd[0]-qdk[0])
    e1=np.array(e1[19:]); e2=np.array(e2[19:])
    return np.sqrt(np.mean(e1**2)), np.sqrt(np.mean(e2**2))
res=np.array([observer_run(s) for s in range(20)])
print("seed-code observer, 20 seeds: rms x1 mean %.4f (min %.4f max %.4f)  rms vx1 mean %.4f (min %.4f max %.4f)" % (res[:,0].mean(), res[:,0].min(), res[:,0].max(), res[:,1].mean(), res[:,1].min(), res[:,1].max()))
